/// JSON-lines rendering of events: one object per line, stable field names.
///
/// `{"t":0.012345,"conn":3,"event":"bytes","dir":"down","bytes":1460}`; `t` is seconds since the
/// start of the run with microsecond resolution.
extension Event {
    public var jsonLine: String { jsonLine(proxy: nil) }

    /// The line with `"proxy":NAME` after `t`: `netsim serve` writes every proxy's events to one
    /// file, and says whose each line is.
    public func jsonLine(proxy: String?) -> String {
        var fields: [(String, JSONValue)] = [("t", .seconds(time))]
        if let proxy { fields.append(("proxy", .string(proxy))) }
        if let connection { fields.append(("conn", .int(Int(connection.raw)))) }
        fields.append(("event", .string(kind.name)))
        fields += kind.jsonFields
        return "{" + fields.map { "\"\($0.0)\":\($0.1.rendered)" }.joined(separator: ",") + "}"
    }
}

enum JSONValue {
    case string(String), int(Int), unsigned(UInt64), seconds(Int64), bool(Bool)

    var rendered: String {
        switch self {
        case .bool(let v): return v ? "true" : "false"
        case .int(let v): return String(v)
        case .unsigned(let v): return String(v)
        case .seconds(let ns):
            let micros = ns / 1000
            let whole = micros / 1_000_000
            let frac = String(abs(micros % 1_000_000))
            return (ns < 0 && whole == 0 ? "-" : "") + "\(whole)." + String(repeating: "0", count: 6 - frac.count) + frac
        case .string(let s): return jsonQuoted(s)
        }
    }
}

/// Quotes a string for JSON, escaping what RFC 8259 requires.
public func jsonQuoted(_ s: String) -> String {
    var out = "\""
    for scalar in s.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where scalar.value < 0x20:
            let hex = String(scalar.value, radix: 16)
            out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

extension EventKind {
    var jsonFields: [(String, JSONValue)] {
        switch self {
        case .seed(let seed): [("seed", .unsigned(seed))]
        case .listening(let address): [("address", .string(address))]
        case .listenerClosed(let reason), .listenerPaused(let reason), .listenerResumed(let reason): [("reason", .string(reason))]
        case .opened(let client): [("client", .string(client?.eventText ?? "unknown"))]
        case .upstreamConnected(let upstream, let after): [("upstream", .string(upstream)), ("after", .seconds(after))]
        case .upstreamFailed(let reason, let detail): [("reason", .string(reason.rawValue)), ("detail", .string(detail))]
        case .bytes(let dir, let count): [("dir", .string(dir.rawValue)), ("bytes", .int(count))]
        case .dropped(let dir, let count, let fault): [("dir", .string(dir.rawValue)), ("bytes", .int(count)), ("fault", .string(fault.rawValue))]
        case .halfClosed(let side): [("by", .string(side.rawValue))]
        case .faultAdded(let fault, let rule): [("fault", .string(fault.rawValue)), ("rule", .string(rule))]
        case .faultFired(let fault, let detail): [("fault", .string(fault.rawValue)), ("detail", .string(detail))]
        case .faultLifted(let fault, let cutShort):
            [("fault", .string(fault.rawValue))] + (cutShort.map { [("cut_short", JSONValue.string($0))] } ?? [])
        case .linkChanged(let description): [("link", .string(description))]
        case .requestStarted(let name, let index, let method, let path):
            [("name", .string(name)), ("index", .int(index)), ("method", .string(method)), ("path", .string(path))]
        case .requestFinished(let name, let index, let status, let error, let port):
            [("name", .string(name)), ("index", .int(index))]
                + (status.map { [("status", JSONValue.int($0))] } ?? [])
                + (error.map { [("error", JSONValue.string($0))] } ?? [])
                + (port.map { [("port", JSONValue.int($0))] } ?? [])
        case .step(let description): [("step", .string(description))]
        case .httpRequest(let method, let path, let reused, let answeredBy, let tag, let version, let stream):
            [("method", .string(method)), ("path", .string(path)), ("version", .string(version.description)), ("reused", .bool(reused))]
                + (answeredBy.map { [("answered_by", JSONValue.string($0))] } ?? [])
                + (tag.map { [("tag", JSONValue.string($0))] } ?? [])
                + (stream.map { [("stream", JSONValue.int($0))] } ?? [])
        case .httpResponse(let status, let bytes, let answeredBy, let stream):
            [("status", .int(status)), ("bytes", .int(bytes))]
                + (answeredBy.map { [("answered_by", JSONValue.string($0))] } ?? [])
                + (stream.map { [("stream", JSONValue.int($0))] } ?? [])
        case .httpUnobserved(let reason): [("reason", .string(reason))]
        case .path(let path): [("path", .string(path))]
        case .closed(let by, let how, let up, let down):
            [("by", .string(by.rawValue)), ("how", .string(how.rawValue)), ("up_bytes", .int(up)), ("down_bytes", .int(down))]
        case .dnsQuery(let name, let type, let transport):
            [("name", .string(name)), ("type", .string(type)), ("transport", .string(transport))]
        case .dnsAnswer(let name, let type, let result, let after):
            [("name", .string(name)), ("type", .string(type)), ("result", .string(result)), ("after", .seconds(after))]
        }
    }
}

extension Endpoint {
    /// `IP:PORT` as event lines have always written a client address: without the brackets
    /// ``description`` puts around an IPv6 host, so the JSON text stays what readers parse.
    var eventText: String { "\(host):\(port)" }
}
