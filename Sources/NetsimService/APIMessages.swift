import Foundation

/// One HTTP request to the control API, transport-independent (tests call ``ToxiproxyAPI/handle(_:)`` directly).
public struct APIRequest: Sendable {
    public var method: String
    /// The request target; a query string is ignored.
    public var uri: String
    /// Header names in any case.
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(method: String, uri: String, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.method = method
        self.uri = uri
        self.headers = headers
        self.body = body
    }

    public init(method: String, uri: String, headers: [(String, String)] = [], json: String) {
        self.init(method: method, uri: uri, headers: headers + [("Content-Type", "application/json")], body: Array(json.utf8))
    }

    func header(_ name: String) -> String? {
        headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
    }

    // MARK: The body

    /// The body, which must be a JSON object, as `T`.
    func object<T: Decodable>(_ type: T.Type) throws -> T {
        guard case .object = try json() else { throw APIError.badRequest("the JSON body must be an object") }
        return try decode(T.self)
    }

    /// The body, which must be a JSON array (else a 400 with `message`), as `[Element]`.
    func array<Element: Decodable>(of type: Element.Type, otherwise message: String) throws -> [Element] {
        guard case .array = try json() else { throw APIError.badRequest(message) }
        return try decode([Element].self)
    }

    /// The 400's message for a body that is not a JSON object or array: where the parser
    /// stopped (JSONSerialization's words: "Unexpected end of file during JSON parse", "Invalid
    /// value around character 1"), and what to send. It starts "malformed JSON body:", as it
    /// always has (it used to end with Foundation's bare "The data is not in the correct format").
    static func malformed(_ body: [UInt8]) -> String {
        var detail = "a bare JSON value"
        do {
            _ = try JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed])
        } catch {
            if let said = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String, !said.isEmpty {
                detail = said.trimmingCharacters(in: CharacterSet(charactersIn: ". "))
            }
        }
        return "malformed JSON body: \(detail); send a JSON object, such as {\"name\":\"db\",\"listen\":\"127.0.0.1:26379\",\"upstream\":\"127.0.0.1:6379\"} or {\"type\":\"latency\",\"attributes\":{\"latency\":100}} (an array of proxies to /populate)"
    }

    /// The body parsed, when it is an object or an array.
    private func json() throws -> JSONValue {
        guard !body.isEmpty else { throw APIError.badRequest("missing JSON body") }
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(body)), value.isContainer else {
            throw APIError.badRequest(Self.malformed(body))
        }
        return value
    }

    /// Decoding a body already known to be JSON of the right shape: the request types take any
    /// member of any type, so this cannot fail but for a bug.
    private func decode<T: Decodable>(_ type: T.Type) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(body))
        } catch {
            throw APIError(500, "cannot read the body as \(T.self): \(error)")
        }
    }
}

/// One answer from the control API.
public struct APIResponse: Sendable {
    public var status: Int
    public var contentType: String
    public var body: [UInt8]

    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body decoded as `T` (nil when empty or not a `T`).
    public func decoded<T: Decodable>(as type: T.Type) -> T? {
        body.isEmpty ? nil : try? JSONDecoder().decode(T.self, from: Data(body))
    }

    /// `value` as JSON with sorted keys, then a newline.
    static func json<T: Encodable>(_ status: Int, _ value: T) -> APIResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return APIResponse(status: status, contentType: "application/json", body: Array(data) + [0x0A])
    }

    static func error(_ error: APIError) -> APIResponse {
        json(error.status, ErrorJSON(error))
    }

    static let noContent = APIResponse(status: 204, contentType: "application/json", body: [])
}
