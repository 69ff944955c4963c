import Foundation
import NetsimCore
import NetsimRoutes

/// A fault that answers HTTP requests in the server's place (`outage`, `portal`): the relay
/// parses the client's requests, never forwards them, and answers each with what this says.
public protocol StandIn: Sendable {
    /// The fault's name, for `answered_by` and the log.
    var faultName: FaultName { get }
    /// The client's first bytes, before any is parsed: a stand-in may refuse to treat them as
    /// HTTP (a portal meeting a TLS ClientHello). nil: parse them.
    func refuses(firstBytes: [UInt8]) -> StandInRefusal?
    /// Bytes that do not parse as an HTTP request. nil: close gracefully, as a server would.
    func refusesUnparseable() -> StandInRefusal?
    /// The answer to one request.
    func reply(to request: HTTPRequestSummary, now: Date) -> StandInReply
}

/// What a stand-in does with bytes it will not answer.
public struct StandInRefusal: Sendable, Equatable {
    public enum How: Sendable, Equatable {
        /// End the client's leg with FIN or RST.
        case close(CloseKind)
        /// Swallow them and never answer (a firewall's DROP).
        case hang
        /// Answer the TLS handshake with a certificate of the relay's own that a correct client
        /// refuses (the connection goes on as under `bad-cert`).
        case impersonate(BadCertificateKind)
    }
    public var how: How
    /// What was refused, for the log ("a TLS ClientHello for example.com").
    public var what: String
    public init(_ how: How, what: String) {
        self.how = how
        self.what = what
    }
}

/// A stand-in's answer to one request.
public enum StandInReply: Sendable {
    /// Answer with this response; `truncated` ends the connection after it.
    case respond(StandInResponse, detail: String, truncated: Bool = false)
    /// Take the request and never answer it.
    case silent(detail: String)
}

/// An HTTP/1.1 request head as the relay's parser saw it: what stand-ins and the log need.
public struct HTTPRequestSummary: Sendable, Equatable {
    public var method: String
    public var uri: String
    public var headers: [HTTPHeader]
    /// False when the request asked to close the connection (or is HTTP/1.0 without keep-alive).
    public var isKeepAlive: Bool
    public var version: HTTPWireVersion
    /// `https` for a request read inside netsim's TLS termination, else `http`: the scheme of
    /// the URL the client asked for when its target is not absolute (a portal's `continue=`).
    public var scheme: String

    public init(method: String, uri: String, headers: [HTTPHeader] = [], isKeepAlive: Bool = true, version: HTTPWireVersion = .http1_1,
                scheme: String = "http") {
        self.version = version
        self.scheme = scheme
        self.method = method
        self.uri = uri
        self.headers = headers
        self.isKeepAlive = isKeepAlive
    }

    /// The first value of a header, by case-insensitive name.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// The scenario's request tag (`X-Netsim-Request`), if the request carries one.
    public var tag: String? { header(RequestTag.header) }
}

/// Every scenario request carries `X-Netsim-Request: NAME#N`; the relay logs it, so the
/// connection that carried a request is known even when the client cannot report its port.
public enum RequestTag {
    public static let header = ServerRequest.tagHeader

    /// The tag of request `index` (from 0) of the scenario request called `name`.
    public static func value(name: String, index: Int) -> String { "\(name)#\(index + 1)" }

    /// How a client's log names request `index` of `name`: `feed #2`.
    public static func label(name: String, index: Int) -> String { "\(name) #\(index + 1)" }

    /// The log's name of the request a tag `value` stands for (`feed#2` → `feed #2`); nil when
    /// it is not a tag (`netsim exec-client` names its requests by their tags).
    public static func label(ofValue value: String) -> String? {
        guard let hash = value.lastIndex(of: "#"), hash > value.startIndex, Int(value[value.index(after: hash)...]) != nil else { return nil }
        return "\(value[..<hash]) \(value[hash...])"
    }
}
