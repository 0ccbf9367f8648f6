import Dispatch
import DownloadService
import Foundation
import HTTPServer
import Logging

// fetchd: read the configuration, start the service, and stop it cleanly on SIGTERM/SIGINT.

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(SettingsParser.help, terminator: "")
    exit(0)
}
if arguments == [SettingsParser.markdownFlag] {
    print(SettingsParser.markdown, terminator: "")
    exit(0)
}

/// A start-up problem: one line on standard error and exit code 2.
func fatalConfiguration(_ message: String) -> Never {
    FileHandle.standardError.write(Data("fetchd: \(message)\n".utf8))
    exit(2)
}

let environment = ProcessInfo.processInfo.environment
var configuration: Configuration
do {
    configuration = try Configuration(values: SettingsParser.values(arguments: arguments, environment: environment))
    configuration.inheritedListeners = try SocketActivation.listeners(environment: environment)
} catch let usage as SettingsParser.Usage {
    fatalConfiguration("\(usage.message) (see --help)")
} catch {
    fatalConfiguration("\(error)")
}
// The passed sockets are taken; nothing fetchd starts should think they are its own.
for name in ["LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"] { unsetenv(name) }

let format: LineLogHandler.Format = configuration.logFormat == "json" ? .json : .text
LoggingSystem.bootstrap { label in LineLogHandler(label: label, format: format) }
let logger = Logger(label: "fetchd")

let service: DownloadService
do {
    service = try DownloadService(configuration: configuration, logger: logger)
} catch {
    fatalConfiguration("\(error)")
}

let notifier: ServiceNotifier?
do {
    notifier = try ServiceNotifier(environment: environment) { @Sendable in service.health() }
} catch {
    fatalConfiguration("\(error)")
}

// Signals are taken before the service starts, so one sent as soon as fetchd answers is never
// lost. The handler is @Sendable: otherwise it would inherit the main actor of top-level code and
// trap when Dispatch runs it on the signal queue.
signal(SIGPIPE, SIG_IGN)
let holds = SchedulerHolds(environment: environment, service: service)
let signals = SignalPipe.deliver([SIGTERM, SIGINT, SIGHUP] + (holds == nil ? [] : SchedulerHolds.signals),
                                 on: DispatchQueue(label: "fetchd.signals")) { @Sendable number in
    if let holds, SchedulerHolds.signals.contains(number) {
        holds.handle(number)
        return
    }
    guard number != SIGHUP else {
        do {
            try service.reloadTokens()
            logger.info("tokens reloaded")
        } catch {
            logger.error("tokens not reloaded", metadata: ["error": "\(error)"])
        }
        return
    }
    logger.info("stopping")
    notifier?.stopping()
    Task {
        await service.shutdown()
        logger.info("stopped")
        exit(0)
    }
}

let port: Int
do {
    port = try service.start()
} catch {
    fatalConfiguration("\(error)")
}
let host = configuration.listenHost.contains(":") ? "[\(configuration.listenHost)]" : configuration.listenHost
let address = configuration.inheritedListeners.isEmpty ? "\(host):\(port)" : configuration.listenerDescription
logger.info("listening", metadata: ["address": "\(address)"])
notifier?.ready(status: "listening on \(address)")

dispatchMain()
