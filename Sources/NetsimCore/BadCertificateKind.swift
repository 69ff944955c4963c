/// The wrong certificates the `bad-cert` fault answers a TLS handshake with: each one a correct
/// client must refuse.
public enum BadCertificateKind: String, Sendable, CaseIterable {
    /// Signed by its own key: no chain to any trusted root.
    case selfSigned = "self-signed"
    /// Issued by netsim's CA (which the client trusts) but expired yesterday.
    case expired
    /// Issued by netsim's CA, valid, for another name (`wrong-host.netsim.invalid`).
    case wrongHost = "wrong-host"
    /// Issued for the right name by a CA the client has never heard of.
    case untrusted

    /// The certificate, with its article, for a sentence: "an expired certificate".
    public var certificate: String {
        switch self {
        case .selfSigned: "a self-signed certificate"
        case .expired: "an expired certificate"
        case .wrongHost: "a certificate issued for another name"
        case .untrusted: "a certificate issued by an unknown CA"
        }
    }

    /// What a correct client refuses it for, for the log.
    public var reason: String {
        switch self {
        case .selfSigned: "self-signed"
        case .expired: "expired"
        case .wrongHost: "issued for another name"
        case .untrusted: "issued by an unknown CA"
        }
    }
}
