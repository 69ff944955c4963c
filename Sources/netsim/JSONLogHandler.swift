import NetsimCore
import Foundation
import Logging

/// swift-log lines as JSON objects, one per line on standard error, for log collectors:
/// `{"time":"2026-11-23T14:30:00.123Z","level":"info","label":"netsim.relay","message":"…","metadata":{…}}`.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    init(label: String) { self.label = label }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        let line = Self.line(time: Date(), level: event.level, label: label, message: event.message.description,
                             metadata: merged, source: event.source)
        StandardStream.error.write(line + "\n")
    }

    /// One log line; separate from `log` so that tests check it without capturing stderr.
    static func line(time: Date, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata, source: String) -> String {
        var object: [String: Any] = [
            "time": timeFormatter.string(from: time), "level": level.rawValue, "label": label,
            "message": message, "source": source,
        ]
        if !metadata.isEmpty { object["metadata"] = metadata.mapValues(json) }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    private static func json(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let text): text
        case .stringConvertible(let value): value.description
        case .array(let values): values.map(json)
        case .dictionary(let values): values.mapValues(json)
        }
    }

    // ISO8601DateFormatter is thread-safe for formatting.
    nonisolated(unsafe) private static let timeFormatter: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()
}
