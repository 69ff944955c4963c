import NetsimCore
import NetsimRoutes
import NetsimLink
import NetsimFaults

/// What the relay connects to.
public enum UpstreamSpec: Equatable, Sendable {
    /// netsim's built-in HTTP server with these routes, speaking `wire`.
    case builtin(routes: [HTTPRoute], idleTimeout: Duration?, wire: UpstreamWire = .plaintext)
    /// A real server.
    case address(Endpoint)
    /// A captured conversation replayed as the server (pcap support).
    case replay(path: String)
}

extension UpstreamSpec {
    /// What a relay intercepting TLS offers clients by ALPN: only what the built-in server
    /// speaks; h2 and HTTP/1.1 before a real server (which the relay's own ALPN then asks).
    public var protocolsOfferedWhenIntercepted: [ApplicationProtocol] {
        if case .builtin(_, _, let wire) = self { return wire.protocols }
        return [.http2, .http1]
    }
}

extension Scenario {
    /// The scheme of the URLs clients are given: `https` when the built-in upstream speaks TLS
    /// or the relay intercepts it.
    public var scheme: String {
        if interceptTLS { return "https" }
        if case .builtin(_, _, let wire) = upstream { return wire.scheme }
        return "http"
    }

    /// Whether clients see TLS (and so must be given netsim's CA).
    public var clientsSpeakTLS: Bool { scheme == "https" }

    /// Whether clients must speak h2 without TLS (h2c with prior knowledge): the built-in
    /// upstream speaks only `h2`, in plaintext.
    public var clientsMustSpeakH2C: Bool {
        guard case .builtin(_, _, let wire) = upstream else { return false }
        return !wire.tls && wire.protocols == [.http2]
    }
}

/// How the built-in upstream speaks: `tls` and `http` of the scenario's `upstream`.
public struct UpstreamWire: Equatable, Sendable {
    /// TLS with a leaf from netsim's CA (`$NETSIM_HOME`).
    public var tls: Bool
    /// Over TLS: offered by ALPN in this order. In plaintext exactly one (`h2` = h2c with prior
    /// knowledge).
    public var protocols: [ApplicationProtocol]

    public init(tls: Bool, protocols: [ApplicationProtocol]) {
        self.tls = tls
        self.protocols = protocols
    }

    /// Plaintext HTTP/1.1: what the built-in server speaks unless told otherwise.
    public static let plaintext = UpstreamWire(tls: false, protocols: [.http1])
    /// What `tls: true` alone means: h2 and HTTP/1.1 by ALPN, as most HTTPS servers offer.
    public static let tlsDefault = UpstreamWire(tls: true, protocols: [.http2, .http1])

    /// `https` or `http`: the scheme of the URLs clients are given.
    public var scheme: String { tls ? "https" : "http" }
}
