import NetsimCore

/// The HTTP checks of a `relay:` expectation: `requests:` and `responses:`, over the requests
/// and responses the relay observed (its `http_request` / `http_response` events).
extension Validator {
    /// Faults that answer requests in the upstream's place; `answered_by` can name one.
    static let answeringFaults = ["outage", "portal"]
    static let answererWords = ["any", "upstream", "relay"] + answeringFaults
    static let httpRequestsKeys = ["method", "path", "from", "to", "answered_by", "count", "min", "max", "min_interval"]
    static let httpResponsesKeys = ["status", "from", "to", "answered_by", "count", "min", "max"]

    /// `requests: { method:, path:, from:, to:, answered_by:, count: | min: | max:, min_interval: }`,
    /// or a bare `N` for `{ count: N }`.
    func httpRequests(_ entry: Entry) -> Check? {
        if case .scalar = entry.value, !entry.value.isNull {
            return integer(entry, range: 0...Int.max, expected: "a count (0 or more) or a mapping")
                .map { .httpRequests(HTTPRequestFilter(), .exactly($0), minimumInterval: nil) }
        }
        guard let map = mapping(entry) else { return nil }
        let unknown = rejectUnknownKeys(map, allowed: Self.httpRequestsKeys)
        let errorsBefore = errorCount
        let window = self.window(map)
        let method = map["method"].flatMap(self.method)
        let path = map["path"].flatMap(pathPattern)
        let answeredBy = map["answered_by"].flatMap(answerer)
        let interval = map["min_interval"].flatMap {
            positiveDuration($0, hint: "the shortest gap allowed between consecutive requests, e.g. min_interval: 2s")
        }
        let range = counted(map, in: "'requests'", extra: "min_interval", unknown: unknown,
                            needs: "'requests' needs 'count', 'min', 'max' or 'min_interval'",
                            hint: "a filter alone checks nothing: add 'count: N', 'min'/'max', or 'min_interval: 2s' (consecutive requests at least 2s apart)")
        guard let window, range != nil || interval != nil, errorCount == errorsBefore else { return nil }
        let filter = HTTPRequestFilter(method: method, path: path, window: window, answeredBy: answeredBy ?? .any)
        return .httpRequests(filter, range, minimumInterval: interval)
    }

    /// `responses: { status:, from:, to:, answered_by:, count: | min: | max: }`, or a bare `N`.
    func httpResponses(_ entry: Entry) -> Check? {
        if case .scalar = entry.value, !entry.value.isNull {
            return integer(entry, range: 0...Int.max, expected: "a count (0 or more) or a mapping")
                .map { .httpResponses(HTTPResponseFilter(), .exactly($0)) }
        }
        guard let map = mapping(entry) else { return nil }
        let unknown = rejectUnknownKeys(map, allowed: Self.httpResponsesKeys)
        let errorsBefore = errorCount
        let window = self.window(map)
        let status = map["status"].flatMap {
            self.status($0, hint: "leave 'status' out to count responses of every status")
        }
        let answeredBy = map["answered_by"].flatMap(answerer)
        let range = counted(map, in: "'responses'", unknown: unknown,
                            needs: "'responses' needs 'count', 'min' or 'max'",
                            hint: "a filter alone checks nothing: add 'count: N' or 'min'/'max', e.g. responses: { status: 503, min: 1 }")
        guard let window, let range, errorCount == errorsBefore else { return nil }
        return .httpResponses(HTTPResponseFilter(status: status, window: window, answeredBy: answeredBy ?? .any), range)
    }

    /// The `count`/`min`/`max` of a check; nil when none is given (an error unless `extra`, another
    /// check of the mapping, is given — and not reported when an unknown key looks like one of them).
    private func counted(_ map: Mapping, in what: String, extra: String? = nil, unknown: [Entry], needs: String, hint: String) -> CountRange? {
        if map["count"] != nil || map["min"] != nil || map["max"] != nil {
            return countOrRange(map, in: what)
        }
        let keys = ["count", "min", "max"] + (extra.map { [$0] } ?? [])
        let misspelt = unknown.contains { closestMatch(to: $0.key, among: keys) != nil }
        if extra.flatMap({ map[$0] }) == nil, !misspelt {
            error(map.location, needs, hint: hint)
        }
        return nil
    }

    /// `/orders` (exactly), or `/api/*` (a prefix).
    private func pathPattern(_ entry: Entry) -> PathPattern? {
        path(entry).map(PathPattern.init)
    }

    /// `any`, `upstream`, `relay` (any fault), or a fault that answers requests.
    private func answerer(_ entry: Entry) -> Answerer? {
        let options = Self.answererWords.map { word in
            (word, word == "any" ? Answerer.any : word == "upstream" ? .upstream : word == "relay" ? .relay : .fault(word))
        }
        return choice(entry, what: "'answered_by' value", options: options,
                      explanation: "use upstream (the server answered), relay (a fault answered instead), a fault by name ("
                          + Self.answeringFaults.joined(separator: ", ") + "), or any")
    }
}
