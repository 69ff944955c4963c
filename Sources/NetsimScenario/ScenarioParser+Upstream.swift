import Foundation
import Yams
import NetsimCore
import NetsimRoutes

extension Validator {
    static let upstreamKinds = ["routes", "address", "replay"]
    static let upstreamKeys = upstreamKinds + ["idle_timeout", "tls", "http"]
    static let routeKeys = ["path", "method", "status", "headers", "body", "body_bytes", "delay", "chunked"]

    func upstream(_ entry: Entry) -> UpstreamSpec? {
        guard let map = mapping(entry) else { return nil }
        rejectUnknownKeys(map, allowed: Self.upstreamKeys)
        let kinds = map.entries.filter { Self.upstreamKinds.contains($0.key) }
        guard let kind = kinds.first else {
            error(map.location, "'upstream' needs one of 'routes', 'address' or 'replay'",
                  hint: "'routes' for netsim's built-in HTTP server, 'address' for a real server (HOST:PORT), 'replay' for a capture")
            return nil
        }
        for extra in kinds.dropFirst() {
            error(extra.keyLocation, "'upstream' has both '\(kind.key)' and '\(extra.key)'; give exactly one of routes, address or replay")
        }
        var idleTimeout: Duration?
        var ok = kinds.count == 1
        if let timeout = map["idle_timeout"] {
            if kind.key != "routes" {
                error(timeout.keyLocation, "'idle_timeout' applies to the built-in server ('routes') only",
                      hint: "a real server or a replay keeps its own idle timeout")
                ok = false
            } else if let value = duration(timeout) {
                if value <= .zero {
                    error(timeout.valueLocation, "'idle_timeout' must be longer than 0: 0 closes every connection before its first request",
                          hint: "give the server's keep-alive timeout, e.g. idle_timeout: 5s (leave it out to keep connections open)")
                    ok = false
                }
                idleTimeout = value
            } else {
                ok = false
            }
        }
        let wire = self.wire(map, builtin: kind.key == "routes")
        switch kind.key {
        case "routes":
            let routes = self.routes(kind)
            guard ok, let routes, let wire else { return nil }
            return .builtin(routes: routes, idleTimeout: idleTimeout, wire: wire)
        case "address":
            let endpoint = self.endpoint(kind)
            guard ok, let endpoint else { return nil }
            // Port 0 is no server's: every request was reset. `netsim relay --upstream` refuses it too.
            guard endpoint.port != 0 else {
                error(kind.valueLocation, "'address' needs the server's port (1-65535); port 0 is no server's", hint: "for example: address: 127.0.0.1:8080")
                return nil
            }
            return .address(endpoint)
        default:
            let path = text(kind, expected: "a file path", allowEmpty: false)
            guard ok, let path else { return nil }
            // Found now, as a trace is, so `netsim check` and `netsim run` agree and the error has
            // its place (it was a run-time failure naming the last folder tried).
            let resolved = ScenarioPaths.resolve(path, scenarioFile: file)
            guard FileManager.default.isReadableFile(atPath: resolved) else {
                error(kind.valueLocation, "cannot find the capture '\(path)'",
                      hint: path.hasPrefix("/") ? "give a pcap file that exists"
                          : "a path relative to the scenario file or a folder above it (or the working directory), e.g. Fixtures/pcap/zeek-http-get.pcap")
                return nil
            }
            // What the file is, from its first bytes: a folder, an empty file or a text file
            // passed the check and failed only once the run had started.
            if let problem = CaptureFileKind.problem(at: resolved) {
                error(kind.valueLocation, "cannot replay '\(path)': \(problem)", hint: "give a capture file (pcap or pcapng), e.g. Fixtures/pcap/zeek-http-get.pcap")
                return nil
            }
            // The whole file, read as the run reads it (when the caller can: netsim's commands).
            if let problem = captureCheck?(resolved) {
                error(kind.valueLocation, "cannot replay '\(path)': \(problem)",
                      hint: "give a whole capture with the server's answers in it (netsim replay --list shows what a capture holds)")
                return nil
            }
            return .replay(path: path)
        }
    }

    /// `tls` and `http`: how the built-in server speaks (plaintext HTTP/1.1 when both are absent).
    private func wire(_ map: Mapping, builtin: Bool) -> UpstreamWire? {
        let tlsEntry = map["tls"]
        let httpEntry = map["http"]
        if !builtin {
            for entry in [tlsEntry, httpEntry].compactMap({ $0 }) {
                error(entry.keyLocation, "'\(entry.key)' applies to the built-in server ('routes') only",
                      hint: "a real server or a replay speaks what it speaks")
            }
            return tlsEntry == nil && httpEntry == nil ? .plaintext : nil
        }
        var tls = false
        if let tlsEntry {
            guard let value = boolean(tlsEntry) else { return nil }
            tls = value
        }
        guard let httpEntry else { return tls ? .tlsDefault : .plaintext }
        let names = ApplicationProtocol.allCases.map(\.rawValue)
        let items: [Node]
        if case .scalar = httpEntry.value {
            items = [httpEntry.value]
        } else {
            guard let list = list(httpEntry, of: "protocols (\(names.joined(separator: ", ")))") else { return nil }
            items = list
        }
        var protocols: [ApplicationProtocol] = []
        for item in items {
            guard let name = item.string, let value = ApplicationProtocol(rawValue: name.lowercased()) else {
                let written = item.string ?? "\(item)"
                error(location(item), "'\(written)' is not an HTTP protocol netsim's server speaks",
                      hint: suggestionHint(written.lowercased(), among: names, listing: "protocols"))
                return nil
            }
            if protocols.contains(value) {
                error(location(item), "'\(name)' is listed twice in 'http'", hint: "list each protocol once, in order of preference")
                return nil
            }
            protocols.append(value)
        }
        if protocols.isEmpty {
            error(httpEntry.valueLocation, "'http' is empty", hint: "for example: http: [h2, http/1.1]")
            return nil
        }
        if !tls, protocols.count > 1 {
            error(httpEntry.valueLocation, "without TLS the server speaks one protocol, and 'http' lists \(protocols.count)",
                  hint: "add 'tls: true' to offer them by ALPN, or keep one: http/1.1, or h2 (h2c with prior knowledge)")
            return nil
        }
        return UpstreamWire(tls: tls, protocols: protocols)
    }

    private func routes(_ entry: Entry) -> [HTTPRoute]? {
        guard let items = list(entry, of: "routes") else { return nil }
        if items.isEmpty {
            error(entry.keyLocation, "'routes' is empty; the built-in server needs at least one route",
                  hint: "for example: routes: [{ path: /, status: 200 }]")
            return nil
        }
        var routes: [HTTPRoute] = []
        var ok = true
        var seen: [String: Int] = [:]
        for (index, item) in items.enumerated() {
            guard let route = self.route(item, number: index + 1) else {
                ok = false
                continue
            }
            let key = "\(route.method ?? "*") \(route.path)"
            let itemLocation = location(item)
            if let line = seen[key] {
                error(itemLocation, "route \(index + 1) repeats \(route.method ?? "any method") \(route.path) from line \(line); only the first would ever answer",
                      hint: "remove one of the two routes")
                ok = false
            } else {
                seen[key] = itemLocation.line
            }
            routes.append(route)
        }
        return ok ? routes : nil
    }

    private func route(_ node: Node, number: Int) -> HTTPRoute? {
        let place = "route \(number)"
        guard let map = mapping(node, what: place, place: place) else { return nil }
        let errorsBefore = errorCount
        rejectUnknownKeys(map, allowed: Self.routeKeys)
        let path = require("path", in: map, hint: "add 'path: /something'").flatMap {
            pathWithoutQuery($0, what: "route path", matched: "routes match")
        }
        var route = HTTPRoute(path: path ?? "/")
        if let e = map["method"], let v = method(e) { route.method = v }
        if let e = map["status"], let v = status(e) { route.status = v }
        if let e = map["headers"], let v = headers(e) { route.headers = v }
        if let e = map["delay"], let v = duration(e) { route.delay = v }
        if let e = map["chunked"], let v = boolean(e) { route.chunked = v }
        let body = map["body"]
        let bodyBytes = map["body_bytes"]
        if let body, let bodyBytes {
            let (first, second) = body.keyLocation.line <= bodyBytes.keyLocation.line ? (body, bodyBytes) : (bodyBytes, body)
            error(second.keyLocation, "'body' and 'body_bytes' exclude each other; \(place) already has '\(first.key)'",
                  hint: "'body' is literal text, 'body_bytes' a number of generated bytes: keep one")
        } else if let body {
            if let v = text(body) { route.body = .text(v) }
        } else if let bodyBytes {
            if let v = byteCount(bodyBytes) { route.body = .generated(bytes: v.bytes) }
        }
        return errorCount == errorsBefore ? route : nil
    }

    /// An HTTP status code, 100…599.
    func status(_ entry: Entry, hint: String? = nil) -> Int? {
        guard let raw = scalar(entry, expected: "an HTTP status code") else { return nil }
        // All digits but past Int: out of range, not "not a whole number" (QA 61).
        let unsigned = raw.drop { $0 == "-" || $0 == "+" }
        let digits = !unsigned.isEmpty && unsigned.allSatisfy { $0.isASCII && $0.isNumber }
        guard let value = Int(raw) ?? (digits ? Int.max : nil) else {
            error(entry.valueLocation, "status '\(raw)' is not a whole number; an HTTP status code is a number from 100 to 599",
                  hint: hint ?? "e.g. status: 200")
            return nil
        }
        guard (100...599).contains(value) else {
            error(entry.valueLocation, "status \(raw) is out of range; an HTTP status code is from 100 to 599", hint: hint)
            return nil
        }
        return value
    }

    /// An HTTP token (RFC 9110): visible ASCII without separators.
    static func isHeaderName(_ name: String) -> Bool {
        !name.isEmpty && name.unicodeScalars.allSatisfy { c in
            c.isASCII && c.value > 32 && c.value < 127 && !"()<>@,;:\\\"/[]?={}".unicodeScalars.contains(c)
        }
    }

    static let headerNameHint = "header names are single words of letters, digits and dashes, such as Content-Type"

    /// The first control character other than a tab in `value` (line breaks aside, said on their
    /// own), which no field value may hold (RFC 9110, 5.5); nil when there is none.
    static func forbiddenInFieldValue(_ value: String) -> Unicode.Scalar? {
        value.unicodeScalars.first { ($0.value < 0x20 && $0 != "\t" && $0 != "\n" && $0 != "\r") || $0.value == 0x7F }
    }

    /// Header names and values, in the order written.
    func headers(_ entry: Entry) -> [HTTPHeader]? {
        guard let pairs = stringPairs(entry, what: "header") else { return nil }
        var headers: [HTTPHeader] = []
        var ok = true
        for pair in pairs {
            if !Self.isHeaderName(pair.key) {
                error(pair.location, "'\(pair.key)' is not a valid header name", hint: Self.headerNameHint)
                ok = false
            } else if pair.value.contains("\n") || pair.value.contains("\r") {
                error(pair.location, "the value of header '\(pair.key)' contains a line break")
                ok = false
            } else if let bad = Self.forbiddenInFieldValue(pair.value) {
                // QA 61: a NUL passed the check; at run time the clients refused the answer, or
                // netsim's own server answered nothing.
                error(pair.location, "the value of header '\(pair.key)' contains the control character U+\(String(format: "%04X", bad.value)), which HTTP does not allow in a header",
                      hint: "a header's value is visible characters, spaces and tabs (RFC 9110, 5.5)")
                ok = false
            } else {
                headers.append(HTTPHeader(pair.key, pair.value))
            }
        }
        return ok ? headers : nil
    }
}

extension Validator {
    /// `server:` counts what netsim's own server received (the built-in one, or a replay's). Your
    /// own server behind `address:` is not netsim's to see: such a check saw 0 requests whatever
    /// happened, so `count: 0` could not fail (QA 40).
    func checkServerSubjects(upstream: UpstreamSpec?, expectations: [Expectation]) {
        guard case .address(let endpoint) = upstream else { return }
        for expectation in expectations {
            guard case .server = expectation.subject else { continue }
            error(expectation.location, "'server' counts what netsim's own server received; this scenario's upstream is your server at \(endpoint), which netsim does not see",
                  hint: "count what reached it through the relay: relay: { requests: { path: /x, count: 1 } }")
        }
    }
}
