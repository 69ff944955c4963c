import NetsimCore

/// `bad-cert=self-signed|expired|wrong-host|untrusted`: a new connection's TLS handshake is
/// answered by the relay itself with a certificate a correct client must refuse — what a captive
/// portal or a hostile network does to HTTPS. Nothing reaches upstream. A client that refuses is
/// logged as doing what it must; a client that completes the handshake is a security finding,
/// logged and named in the report, and its requests get a page saying so.
///
/// `expired` and `wrong-host` are issued by netsim's CA, so a client that trusts it refuses them
/// for the reason named and no other.
public struct BadCert: Fault {
    public static let name = "bad-cert"
    public static let syntax = "=self-signed|expired|wrong-host|untrusted"
    public static let example = "bad-cert=self-signed"
    public static let scope = FaultScope.accept
    public static let summary = "TLS is answered with a certificate a correct client refuses; accepting it is a security finding"

    public var kind: BadCertificateKind
    public init(_ kind: BadCertificateKind) { self.kind = kind }
    public init(argument: String?) throws(FaultArgumentError) {
        let text = try FaultArgumentError.required(argument, for: Self.name)
        guard let kind = BadCertificateKind(rawValue: text) else {
            throw FaultArgumentError("a bad certificate (bad-cert=self-signed, expired, wrong-host or untrusted)")
        }
        self.kind = kind
    }
    public var argument: String? { kind.rawValue }

    public func makeEffect() -> any FaultEffect { Effect(kind: kind) }

    struct Effect: FaultEffect {
        let kind: BadCertificateKind
        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
            connection.fire("the relay answers this connection's TLS handshake with \(kind.certificate); nothing goes upstream")
            return .stays
        }
        var impersonation: BadCertificateKind? { kind }
    }
}

extension FaultKind {
    public static func badCert(_ kind: BadCertificateKind) -> FaultKind { FaultKind(BadCert(kind)) }
}
