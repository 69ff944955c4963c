import NetsimRelay

/// The toxics whose relay answers HTTP itself instead of the upstream: `outage` (a server
/// outage) and `portal` (a captive portal). Their attributes are strings, each from a fixed set:
///
/// | type | attribute | values | default |
/// |---|---|---|---|
/// | `outage` | `kind` | `503`, `500`, `error-page`, `truncated`, `no-headers` | `503` |
/// | `portal` | `answer` | `redirect`, `page` | `redirect` |
/// | `portal` | `tls` | `reset`, `close`, `hang` | `reset` |
///
/// They act on the whole connection (the relay answers in place of the server), so `stream`
/// is accepted either way and changes nothing but the default name.
extension Toxic {
    /// True for `outage` and `portal`.
    var isStandIn: Bool { Toxic.isStandIn(type) }

    static func isStandIn(_ type: String) -> Bool { type == "outage" || type == "portal" }

    /// Each attribute's default value.
    static let standInDefaults = ["kind": OutageKind.serviceUnavailable.rawValue,
                                  "answer": PortalSettings.Answer.redirect.rawValue,
                                  "tls": PortalSettings.Break.reset.rawValue]

    /// Each attribute's allowed values.
    static let standInChoices: [String: [String]] = [
        "kind": OutageKind.allCases.map(\.rawValue),
        "answer": PortalSettings.Answer.allCases.map(\.rawValue),
        "tls": PortalSettings.Break.allCases.map(\.rawValue),
    ]

    private static func choices(_ key: String) -> String {
        (standInChoices[key] ?? []).map { "\"\($0)\"" }.joined(separator: ", ")
    }

    /// The 400 for an attribute that is not a string; `got` says what it was instead ("the
    /// number 5", "null", "an array"…).
    static func standInTypeError(type: String, key: String, got: String) -> APIError {
        APIError.badRequest("attribute \(key) of a \(type) toxic must be a JSON string, one of \(choices(key)) (got \(got))")
    }

    private func standInValue(_ key: String) throws -> String {
        guard case .string(let text)? = attributes[key] else {
            throw APIError.badRequest("attribute \(key) of a \(type) toxic must be a JSON string, one of \(Toxic.choices(key))")
        }
        guard Toxic.standInChoices[key]?.contains(text) == true else {
            throw APIError.badRequest("attribute \(key) of a \(type) toxic must be one of \(Toxic.choices(key)), not \"\(text)\"")
        }
        return text
    }

    /// The relay fault: `outage(kind)` or `portal(answer, tls)`.
    func standInFault() throws -> FaultKind {
        switch type {
        case "outage":
            return .outage(OutageKind(rawValue: try standInValue("kind"))!)
        case "portal":
            return .portal(PortalSettings(answer: PortalSettings.Answer(rawValue: try standInValue("answer"))!,
                                          tls: PortalSettings.Break(rawValue: try standInValue("tls"))!))
        default:
            throw APIError.badRequest("invalid toxic type: \(type)")
        }
    }
}
