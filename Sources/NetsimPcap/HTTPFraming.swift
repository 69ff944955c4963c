/// Where HTTP/1.x messages begin and end in a byte stream: enough to cut captured streams into
/// requests and responses, and to read requests off a replay connection. It frames; it does not
/// validate or rewrite (replay sends the captured bytes as they were).
enum HTTPFraming {
    /// A message head: start line and header fields (obsolete line folding joined, as in
    /// arkime-http-wrapped-header.pcap).
    struct Head {
        var startLine: String
        var fields: [(name: String, value: String)]
        /// Bytes up to and including the blank line.
        var length: Int

        func field(_ name: String) -> String? {
            fields.first { $0.name.lowercased() == name.lowercased() }?.value
        }

        var isChunked: Bool { field("Transfer-Encoding")?.lowercased().contains("chunked") ?? false }
        var contentLength: Int? {
            field("Content-Length").flatMap { Int($0.trimmed(of: " \t")) }.flatMap { $0 >= 0 ? $0 : nil }
        }
        var closes: Bool { field("Connection")?.lowercased().contains("close") ?? false }
        /// A request after whose answer the server closes (RFC 9112 §9.3, §9.6): `Connection:
        /// close`, or HTTP/1.0 without `keep-alive`.
        var endsConnection: Bool {
            closes || (startLine.hasSuffix("HTTP/1.0") && !(field("Connection")?.lowercased().contains("keep-alive") ?? false))
        }
    }

    struct Message {
        var head: Head
        /// Head and body.
        var length: Int
        /// True when the body runs until the connection closes (a response with no length).
        var endsAtClose: Bool
    }

    enum Result {
        case message(Message)
        case needMore
        case invalid(String)
    }

    /// Heads longer than this are not HTTP (or not worth replaying).
    static let largestHead = 64 * 1024
    static let methods: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT", "PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK", "REPORT", "SEARCH"]

    /// Whether `bytes` starts like an HTTP request line ("GET /…").
    static func looksLikeRequest(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard let space = bytes.prefix(10).firstIndex(of: 0x20) else { return false }
        return methods.contains(String(decoding: bytes[bytes.startIndex..<space], as: UTF8.self))
    }

    /// The request at the start of `bytes`: (method, target, framing).
    static func request(_ bytes: ArraySlice<UInt8>) -> (method: String, target: String, result: Result) {
        guard let head = head(bytes) else {
            return ("", "", bytes.count > largestHead ? .invalid("no end of the request head within \(largestHead) bytes") : .needMore)
        }
        let parts = head.startLine.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 3, methods.contains(String(parts[0])), parts[2].hasPrefix("HTTP/") else {
            return ("", "", .invalid("not an HTTP request line: \(head.startLine.prefix(60))"))
        }
        let method = String(parts[0])
        let target = String(parts[1])
        if head.isChunked { return (method, target, chunked(bytes, head: head)) }
        let total = head.length + (head.contentLength ?? 0)
        return (method, target, bytes.count >= total ? .message(Message(head: head, length: total, endsAtClose: false)) : .needMore)
    }

    /// The response at the start of `bytes`, to a request with `method`. `atEnd`: no more bytes
    /// will come, so a body without a length ends here.
    static func response(_ bytes: ArraySlice<UInt8>, method: String, atEnd: Bool) -> (status: Int, result: Result) {
        guard let head = head(bytes) else {
            return (0, bytes.count > largestHead || atEnd && !bytes.isEmpty ? .invalid("no complete response head") : .needMore)
        }
        let parts = head.startLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let status = Int(parts[1]), (100...999).contains(status) else {
            return (0, .invalid("not an HTTP status line: \(head.startLine.prefix(60))"))
        }
        if method == "HEAD" || (100...199).contains(status) && status != 101 || status == 204 || status == 304 {
            return (status, .message(Message(head: head, length: head.length, endsAtClose: false)))
        }
        if status == 101 || method == "CONNECT" && (200...299).contains(status) {
            return (status, atEnd ? .message(Message(head: head, length: bytes.count, endsAtClose: true)) : .needMore)
        }
        if head.isChunked { return (status, chunked(bytes, head: head)) }
        if let length = head.contentLength {
            let total = head.length + length
            return (status, bytes.count >= total ? .message(Message(head: head, length: total, endsAtClose: false)) : .needMore)
        }
        return (status, atEnd ? .message(Message(head: head, length: bytes.count, endsAtClose: true)) : .needMore)
    }

    /// Parses the head, or nil if its end has not arrived.
    static func head(_ bytes: ArraySlice<UInt8>) -> Head? {
        let limit = min(bytes.count, largestHead)
        let start = bytes.startIndex
        var end: Int?
        var i = start
        while i < start + limit {
            if bytes[i] == 0x0a {
                if i + 1 < bytes.endIndex, bytes[i + 1] == 0x0a { end = i + 2; break }
                if i + 2 < bytes.endIndex, bytes[i + 1] == 0x0d, bytes[i + 2] == 0x0a { end = i + 3; break }
            }
            i += 1
        }
        guard let end else { return nil }
        // Split on LF bytes: as Characters, "\r\n" is one grapheme and never equals "\n".
        var lines = bytes[start..<end]
            .split(separator: 0x0a, omittingEmptySubsequences: false)
            .map { line in String(decoding: line.last == 0x0d ? line.dropLast() : line, as: UTF8.self) }
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard let startLine = lines.first else { return nil }
        var fields: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            if line.first == " " || line.first == "\t", !fields.isEmpty {
                fields[fields.count - 1].value += " " + line.trimmed(of: " \t")
            } else if let colon = line.firstIndex(of: ":") {
                fields.append((String(line[..<colon]), String(line[line.index(after: colon)...]).trimmed(of: " \t")))
            }
        }
        return Head(startLine: startLine, fields: fields, length: end - start)
    }

    /// A chunked body: sizes in hex, a zero chunk, trailers, a blank line.
    private static func chunked(_ bytes: ArraySlice<UInt8>, head: Head) -> Result {
        var at = bytes.startIndex + head.length
        while true {
            guard let lineEnd = bytes[at...].firstIndex(of: 0x0a) else { return .needMore }
            let line = String(decoding: bytes[at..<lineEnd], as: UTF8.self)
            let hex = line.split(separator: ";").first.map { String($0).trimmed(of: " \t\r") } ?? ""
            guard let size = Int(hex, radix: 16), size >= 0, size < 1 << 40 else { return .invalid("bad chunk size '\(line.prefix(20))'") }
            at = lineEnd + 1
            if size == 0 {
                // Trailers, then the blank line.
                while true {
                    guard let end = bytes[at...].firstIndex(of: 0x0a) else { return .needMore }
                    let blank = end == at || end == at + 1 && bytes[at] == 0x0d
                    at = end + 1
                    if blank {
                        return .message(Message(head: head, length: at - bytes.startIndex, endsAtClose: false))
                    }
                }
            }
            guard bytes.endIndex - at >= size + 1 else { return .needMore }
            at += size
            if bytes[at] == 0x0d { at += 1 }
            guard at < bytes.endIndex else { return .needMore }
            if bytes[at] == 0x0a { at += 1 }
        }
    }
}

extension String {
    func trimmed(of set: String) -> String {
        let characters = Set(set)
        var slice = Substring(self)
        while let first = slice.first, characters.contains(first) { slice.removeFirst() }
        while let last = slice.last, characters.contains(last) { slice.removeLast() }
        return String(slice)
    }
}
