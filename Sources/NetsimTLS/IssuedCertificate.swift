import Crypto
import Foundation
import NIOSSL
import X509

/// A certificate with its private key, ready for NIOSSL: a leaf netsim minted (chain: leaf, CA) or
/// a deliberately bad one for the `bad-cert` fault.
public struct IssuedCertificate: @unchecked Sendable {
    /// Leaf first, then the issuer if the client needs it to build the chain.
    public let chain: [Certificate]
    public let privateKey: P256.Signing.PrivateKey
    public let nioChain: [NIOSSLCertificate]
    public let nioPrivateKey: NIOSSLPrivateKey

    public init(chain: [Certificate], privateKey: P256.Signing.PrivateKey) throws {
        self.chain = chain
        self.privateKey = privateKey
        self.nioChain = try chain.map { try NIOSSLCertificate(bytes: try $0.serializeAsPEM().derBytes, format: .der) }
        self.nioPrivateKey = try NIOSSLPrivateKey(bytes: Array(privateKey.pemRepresentation.utf8), format: .pem)
    }

    public var leaf: Certificate { chain[0] }

    /// The chain as PEM, leaf first.
    public func chainPEM() throws -> String {
        try chain.map { try $0.serializeAsPEM().pemString }.joined(separator: "\n") + "\n"
    }

    /// What NIOSSL's SNI callback answers with.
    public var configurationOverride: NIOSSLContextConfigurationOverride {
        var override = NIOSSLContextConfigurationOverride()
        override.certificateChain = nioChain.map { .certificate($0) }
        override.privateKey = .privateKey(nioPrivateKey)
        return override
    }
}
