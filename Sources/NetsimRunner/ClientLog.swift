import NIOConcurrencyHelpers

/// What a client driver logs for failure reports (its notes, an exec client's stderr): the last
/// 64 KiB, appended to by concurrent requests.
public final class ClientLog: Sendable {
    private let text = NIOLockedValueBox(BoundedText(limit: 64 * 1024))

    public init() {}

    /// Appends `line` and a newline.
    public func note(_ line: String) { append(line + "\n") }

    /// Appends text as it came (a chunk of a client's stderr).
    public func append(_ more: String) { text.withLockedValue { $0.append(more) } }

    public var contents: String { text.withLockedValue { $0.text } }
}

/// Keeps the last `limit` characters of a growing text.
struct BoundedText: Sendable {
    let limit: Int
    private(set) var text = ""

    init(limit: Int) { self.limit = limit }

    mutating func append(_ more: String) {
        text += more
        if text.count > limit { text = "…" + text.suffix(limit) }
    }
}
