import Foundation
import NetsimHTTP
import NetsimScenario

// The exec protocol (docs/drivers.md) as types: one JSON object per line, `config` and
// `request` from netsim to the client's stdin, `hello` and answers back on its stdout.

/// A line netsim writes to an exec client: the `config` line first, then `request` lines.
enum ExecCommand: Codable, Equatable {
    case config(ExecConfig)
    case request(ExecRequest)

    private enum CodingKeys: String, CodingKey { case type }

    // The `type` key and the payload's keys share one JSON object.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .config(let config):
            try container.encode("config", forKey: .type)
            try config.encode(to: encoder)
        case .request(let request):
            try container.encode("request", forKey: .type)
            try request.encode(to: encoder)
        }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        switch try container.decode(String.self, forKey: .type) {
        case "config": self = .config(try ExecConfig(from: decoder))
        case "request": self = .request(try ExecRequest(from: decoder))
        case let other:
            throw DecodingError.dataCorruptedError(forKey: .type, in: container, debugDescription: "unknown type \"\(other)\"")
        }
    }

    /// The line as written: compact JSON with sorted keys, then a newline.
    func line() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var data = try encoder.encode(self)
        data.append(0x0A)
        return data
    }
}

/// `config`: the client's settings from the scenario. Every field is written, `null` meaning
/// "the client's own default", as the protocol says.
struct ExecConfig: Codable, Equatable {
    /// Seconds.
    var timeout: Double?
    /// Seconds.
    var connectTimeout: Double?
    var pool: Int?
    var retries: Int?
    var settings: [String: String]

    enum CodingKeys: String, CodingKey {
        case timeout, connectTimeout = "connect_timeout", pool, retries, settings
    }

    init(timeout: Double?, connectTimeout: Double?, pool: Int?, retries: Int?, settings: [String: String]) {
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.pool = pool
        self.retries = retries
        self.settings = settings
    }

    init(_ client: ClientSpec) {
        self.init(timeout: client.timeout?.seconds, connectTimeout: client.connectTimeout?.seconds,
                  pool: client.pool, retries: client.retries, settings: client.settings)
    }

    // Written by hand: encoding an optional with `encode` (not `encodeIfPresent`) writes null.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(timeout, forKey: .timeout)
        try container.encode(connectTimeout, forKey: .connectTimeout)
        try container.encode(pool, forKey: .pool)
        try container.encode(retries, forKey: .retries)
        try container.encode(settings, forKey: .settings)
    }
}

/// `request`: one request for the client to make; its answer carries `id` back.
struct ExecRequest: Codable, Equatable {
    var id: Int
    var method: String
    var url: String
    /// Sent as given; one value per name (the last one given wins).
    var headers: [String: String]
    /// The request body as text, `null` for none.
    var body: String?

    enum CodingKeys: String, CodingKey { case id, method, url, headers, body }

    init(_ request: DriverRequest) {
        id = request.id
        method = request.method
        url = request.url
        headers = Dictionary(request.headers.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
        body = request.body
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(method, forKey: .method)
        try container.encode(url, forKey: .url)
        try container.encode(headers, forKey: .headers)
        try container.encode(body, forKey: .body)
    }
}

/// `hello`: the client has started and takes requests.
struct ExecHello: Codable, Equatable {
    var name: String?
    var version: String?
    /// The exec protocol version the client speaks (``current``); absent: 1, the version before
    /// the field existed.
    var `protocol`: Int?

    enum CodingKeys: String, CodingKey { case name, version, `protocol` }

    /// The protocol this netsim speaks (docs/drivers.md). A change that an existing client
    /// could misread raises it; a client announcing a newer one is refused with a clear error.
    static let current = 1
}

/// The answer to one request: what the client saw.
struct ExecAnswer: Codable, Equatable {
    var id: Int
    var status: Int?
    /// Names lower-cased; repeated headers joined with `, `.
    var headers: [String: String]?
    var bodySHA256: String?
    var bodyLength: Int?
    /// At most the body's first 64 KiB, as text.
    var body: String?
    var error: ExecAnswerError?
    var localPort: Int?
    /// The client answered from its own cache (nothing went on the network); absent: false.
    var fromCache: Bool?
    /// Seconds the client took; netsim times requests itself and does not use it.
    var elapsed: Double?

    enum CodingKeys: String, CodingKey {
        case id, status, headers, bodySHA256 = "body_sha256", bodyLength = "body_length", body, error
        case localPort = "local_port", fromCache = "from_cache", elapsed
    }

    var response: DriverResponse {
        DriverResponse(
            status: status,
            headers: (headers ?? [:]).sorted { $0.key < $1.key }.map { HTTPHeader($0.key, $0.value) },
            bodySHA256: bodySHA256, bodyLength: bodyLength, body: body,
            // A kind the runner does not know is still a failure: `other`.
            error: error.map { $0.kind.flatMap(ErrorKind.init(rawValue:)) ?? .other },
            errorMessage: error?.message, localPort: localPort, fromClientCache: fromCache ?? false)
    }

    /// The answer with at most the body's first 64 KiB (``ClientDriver/textLimit``), as every
    /// driver reports it, and what was cut, for the client's log. A U+FFFD counts as the one
    /// invalid byte it replaced. A client that sent its whole 50 MB body had it kept, and judged
    /// whole where another driver's first 64 KiB is judged (QA 62).
    /// What the client's log says when a body's text was cut (driver-check looks for it).
    static let keptText = "netsim kept its first \(DriverResponse.textLimit)"

    func limitingBody() -> (answer: ExecAnswer, note: String?) {
        guard let body, body.utf8.count > DriverResponse.textLimit else { return (self, nil) }
        var kept = 0
        var end = body.unicodeScalars.startIndex
        for index in body.unicodeScalars.indices {
            let scalar = body.unicodeScalars[index]
            let bytes = scalar == "\u{FFFD}" ? 1 : UTF8.width(scalar)
            if kept + bytes > DriverResponse.textLimit { break }
            kept += bytes
            end = body.unicodeScalars.index(after: index)
        }
        guard end < body.unicodeScalars.endIndex else { return (self, nil) }
        var limited = self
        limited.body = String(body.unicodeScalars[..<end])
        return (limited, "the answer to request \(id) has a body of \(body.utf8.count) bytes of text; \(Self.keptText) (docs/drivers.md: body is at most the body's first 65536 bytes)")
    }

    /// What is wrong with `error`'s kind, when it is not one netsim knows: the answer still
    /// counts as a failure (`other`), and the client's log says why (QA 47: it said nothing, so a
    /// typo such as `"connection_reset"` passed for a classification).
    var kindProblem: String? {
        guard let error else { return nil }
        let known = ErrorKind.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
        guard let kind = error.kind else {
            return "the answer to request \(id) has an error without a \"kind\", counted as \"other\" (docs/drivers.md, \"Classifying errors\": one of \(known))"
        }
        guard ErrorKind(rawValue: kind) == nil else { return nil }
        return "the answer to request \(id) has error kind \"\(kind)\", which is not one of \(known); counted as \"other\" (docs/drivers.md, \"Classifying errors\")"
    }
}

/// `error` in an answer: `{"kind":"reset","message":"…"}`.
struct ExecAnswerError: Codable, Equatable {
    var kind: String?
    var message: String?

    enum CodingKeys: String, CodingKey { case kind, message }
}
