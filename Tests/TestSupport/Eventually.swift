/// Waits until `condition` holds, asking again every millisecond for at most `timeout`: for work
/// the code under test does on its own thread, queue or task. False if it never held.
public func eventually(within timeout: Duration = .seconds(5), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return try await condition()
}
