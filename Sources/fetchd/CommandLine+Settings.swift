import DownloadService
import Foundation

/// Reads settings from flags (`--name value`, `--name=value`, or a bare `--name` for true) and
/// from environment variables; a flag wins over the environment.
enum SettingsParser {
    struct Usage: Error { var message: String }

    static func values(arguments: [String], environment: [String: String]) throws(Usage) -> [String: String] {
        var values: [String: String] = [:]
        for setting in Setting.all {
            if let value = environment[setting.env] { values[setting.flag] = value }
        }
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            guard argument.hasPrefix("--") else { throw Usage(message: "unexpected argument '\(argument)'") }
            let body = argument.dropFirst(2)
            let name = String(body.prefix { $0 != "=" })
            guard Setting.all.contains(where: { $0.flag == name }) else { throw Usage(message: "unknown option '--\(name)'") }
            if let equals = body.firstIndex(of: "=") {
                values[name] = String(body[body.index(after: equals)...])
            } else if let next = remaining.first, !next.hasPrefix("--") {
                values[name] = next
                remaining = remaining.dropFirst()
            } else if ["insecure", "allow-private-networks"].contains(name) {
                values[name] = "true"
            } else {
                throw Usage(message: "option '--\(name)' needs a value")
            }
        }
        return values
    }

    static var help: String {
        var text = """
            fetchd — a self-hosted download queue: POST a job, get the file and a signed webhook.

            USAGE: fetchd [--option value …]

            Every option can also be set with its environment variable; a flag wins.

            OPTIONS:

            """
        for setting in Setting.all {
            let flag = "  --\(setting.flag) <value>"
            text += flag.padding(toLength: max(flag.count + 1, 36), withPad: " ", startingAt: 0) + setting.help + "\n"
            text += String(repeating: " ", count: 36) + "env \(setting.env)" + (setting.defaultValue.map { ", default \($0)" } ?? "") + "\n"
        }
        text += "  -h, --help                        show this help\n"
        return text
    }

    /// The settings as a Markdown table, for docs/configuration.md (`make docs`, through
    /// scripts/docs/configuration.py): the same table `--help` prints, so the two cannot differ.
    /// Not listed in `--help`: it is for the documentation's generator, not for operators.
    static let markdownFlag = "--settings-markdown"

    static var markdown: String {
        var text = "| env | flag | default | meaning |\n|---|---|---|---|\n"
        for setting in Setting.all {
            let defaultValue = setting.defaultValue.map { "`\($0)`" } ?? "none"
            text += "| `\(setting.env)` | `--\(setting.flag)` | \(defaultValue) | \(markdownText(setting.help)) |\n"
        }
        return text
    }

    /// Text for a table cell: `|` would end the cell, and `<`, `>`, `&` would be read as HTML
    /// (`<data dir>` is an element to a Markdown renderer).
    private static func markdownText(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "|": escaped += "\\|"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
