import Dispatch
import DownloadService
import Foundation
import Logging

// fetchd: read the configuration, start the service, and stop it cleanly on SIGTERM/SIGINT.

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(SettingsParser.help, terminator: "")
    exit(0)
}

/// A start-up problem: one line on standard error and exit code 2.
func fatalConfiguration(_ message: String) -> Never {
    FileHandle.standardError.write(Data("fetchd: \(message)\n".utf8))
    exit(2)
}

let configuration: Configuration
do {
    configuration = try Configuration(values: SettingsParser.values(arguments: arguments, environment: ProcessInfo.processInfo.environment))
} catch let usage as SettingsParser.Usage {
    fatalConfiguration("\(usage.message) (see --help)")
} catch {
    fatalConfiguration("\(error)")
}

let format: LineLogHandler.Format = configuration.logFormat == "json" ? .json : .text
LoggingSystem.bootstrap { label in LineLogHandler(label: label, format: format) }
let logger = Logger(label: "fetchd")

let service: DownloadService
let port: Int
do {
    service = try DownloadService(configuration: configuration, logger: logger)
    port = try service.start()
} catch {
    fatalConfiguration("\(error)")
}
let host = configuration.listenHost.contains(":") ? "[\(configuration.listenHost)]" : configuration.listenHost
logger.info("listening", metadata: ["address": "\(host):\(port)"])

// Signals arrive on a Dispatch source, not in a C handler, so stopping can run ordinary Swift code.
// The handlers are @Sendable: otherwise they would inherit the main actor of top-level code and
// trap when Dispatch runs them on the signal queue.
signal(SIGTERM, SIG_IGN)
signal(SIGINT, SIG_IGN)
signal(SIGHUP, SIG_IGN)
signal(SIGPIPE, SIG_IGN)
let signalQueue = DispatchQueue(label: "fetchd.signals")
let stopSources = [SIGTERM, SIGINT].map { DispatchSource.makeSignalSource(signal: $0, queue: signalQueue) }
for source in stopSources {
    source.setEventHandler { @Sendable in
        logger.info("stopping")
        Task {
            await service.shutdown()
            logger.info("stopped")
            exit(0)
        }
    }
    source.resume()
}
let reloadSource = DispatchSource.makeSignalSource(signal: SIGHUP, queue: signalQueue)
reloadSource.setEventHandler { @Sendable in
    do {
        try service.reloadTokens()
        logger.info("tokens reloaded")
    } catch {
        logger.error("tokens not reloaded", metadata: ["error": "\(error)"])
    }
}
reloadSource.resume()

dispatchMain()
