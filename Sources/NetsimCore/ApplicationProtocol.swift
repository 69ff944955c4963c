/// The HTTP protocols netsim speaks, named as ALPN names them (RFC 7301): what a scenario's
/// `upstream: { http: [h2, http/1.1] }` lists and what a TLS handshake negotiates.
public enum ApplicationProtocol: String, Sendable, CaseIterable, Codable {
    case http2 = "h2"
    case http1 = "http/1.1"
}
