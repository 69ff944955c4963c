import NIOCore

/// An IPv4 or IPv6 network in CIDR notation (`10.0.0.0/8`, `192.168.1.7`, `fd00::/8`), for
/// `netsim proxy --allow`.
public struct AddressRange: Sendable, Equatable, CustomStringConvertible {
    public let network: [UInt8]
    public let prefixLength: Int
    public let description: String

    public static let allowedForms = "an address or network in CIDR notation, e.g. 192.168.1.0/24, 10.1.2.3 or fd00::/8"

    public init(parsing text: String) throws {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard let first = parts.first, let address = try? SocketAddress(ipAddress: first, port: 0),
              let bytes = AddressRange.bytes(of: address)
        else { throw AddressRangeError(text: text) }
        let length: Int
        if parts.count == 2 {
            guard let n = Int(parts[1]), (0...(bytes.count * 8)).contains(n) else { throw AddressRangeError(text: text) }
            length = n
        } else {
            length = bytes.count * 8
        }
        self.network = bytes
        self.prefixLength = length
        self.description = text
    }

    public func contains(_ address: SocketAddress) -> Bool {
        guard let bytes = AddressRange.bytes(of: address), bytes.count == network.count else { return false }
        var remaining = prefixLength
        for (a, b) in zip(bytes, network) where remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if a & mask != b & mask { return false }
            remaining -= bits
        }
        return true
    }

    /// The address's bytes; an IPv4-mapped IPv6 address counts as IPv4.
    static func bytes(of address: SocketAddress) -> [UInt8]? {
        switch address {
        case .v4(let a):
            return withUnsafeBytes(of: a.address.sin_addr) { Array($0) }
        case .v6(let a):
            let bytes = withUnsafeBytes(of: a.address.sin6_addr) { Array($0) }
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF { return Array(bytes[12...]) }
            return bytes
        default:
            return nil
        }
    }

    static let loopback = [try! AddressRange(parsing: "127.0.0.0/8"), try! AddressRange(parsing: "::1/128")]
}

public struct AddressRangeError: Error, CustomStringConvertible, Sendable {
    public var text: String
    public var description: String { "\(text) is not \(AddressRange.allowedForms)" }
}
