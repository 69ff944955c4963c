import NetsimScenario

/// How verdicts name their subjects and checks (`request after-unlock: status 200`), and how they
/// quote what they show.
extension ExpectationJudge {
    static func describe(_ subject: Expectation.Subject) -> String {
        switch subject {
        case .request(let name): "request \(name)"
        case .requestsAfter(let time): "requests from \(time.compactDescription) on"
        case .server(let method, let path): "server" + (method.map { " \($0)" } ?? "") + (path.map { " \($0)" } ?? "")
        case .relay: "relay"
        case .client: "client"
        }
    }

    static func describe(_ check: Check) -> String {
        switch check {
        case .status(let status): "status \(status)"
        case .body(.equals): "body equals"
        case .body(.contains(let text)): "body contains \(quoted(text))"
        case .body(.notContains(let text)): "body lacks \(quoted(text))"
        case .body(.sha256): "body digest"
        case .headers(let checks): "headers " + checks.map(\.name).joined(separator: ", ")
        case .error(.none): "error none"
        case .error(.any): "error any"
        case .error(.kind(let kind)): "error \(kind.rawValue)"
        case .within(let bound): "within \(bound.compactDescription)"
        case .connection(let use): "connection \(use.rawValue)"
        case .requestCount(let range): "requests \(range)"
        case .serverCount(let range): "count \(range)"
        case .exitedCleanly: "exit status 0"
        case .answeredEveryRequest: "every request answered"
        case .newConnections(_, let range): "new connections \(range)"
        case .attempts: "connection attempts"
        case .bytes(let direction, _, let range): "bytes\(direction.map { " \($0.rawValue)" } ?? "") \(range)"
        case .errorMessage(let match): "message \(describe(match))"
        case .httpRequests(let filter, let range, let interval):
            // `requests /feed: at most 4, each at least 1.5s after the one before`
            ["requests", describe(filter)].filter { !$0.isEmpty }.joined(separator: " ") + ": "
                + [range?.description, interval.map { "each at least \($0.compactDescription) after the one before" }].compactMap { $0 }.joined(separator: ", ")
        case .httpResponses(let filter, let range):
            ["responses", describe(filter)].filter { !$0.isEmpty }.joined(separator: " ") + ": \(range)"
        }
    }

    /// `Content-Type containing "json"`, `no Set-Cookie`.
    static func describe(_ check: HeaderCheck) -> String {
        switch check.expectation {
        case .equals(let value): "\(check.name) \(quoted(value))"
        case .contains(let text): "\(check.name) containing \(quoted(text))"
        case .present(true): "\(check.name) present"
        case .present(false): "no \(check.name)"
        }
    }

    /// `starts with "captive portal:"`.
    static func describe(_ match: TextMatch) -> String {
        switch match {
        case .startsWith(let prefix): "starts with \(quoted(prefix))"
        case .contains(let part): "contains \(quoted(part))"
        }
    }
}

/// `text` in quotes, as a verdict shows a body or a value: line breaks and tabs escaped, and any
/// other control character as `\u{1b}`, so a server's bytes never reach a terminal or a CI log
/// as escape sequences (a body with ESC [31m coloured the failure report red).
func quoted(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""  // a quote inside reads as one: "\"id\"", not ""id""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where scalar.properties.generalCategory == .control: out += "\\u{\(String(scalar.value, radix: 16))}"
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}
