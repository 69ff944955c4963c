/// Which flows of a capture to use: `--flow` on `netsim replay` and `netsim profile`.
///
/// A comma-separated list of: a flow number as `netsim profile` lists them (`2`), an endpoint
/// (`10.0.0.2:80`, `[2001:db8::1]:443`), a port (`:80`) or an address (`10.0.0.2`). A flow is
/// selected when any item matches it (an endpoint or address matches either end).
public struct FlowSelector: Sendable, CustomStringConvertible {
    enum Item: Sendable {
        case number(Int)
        case port(UInt16)
        case address([UInt8])
        case endpoint(PacketEndpoint)
    }

    let items: [Item]
    public let description: String

    /// Every flow.
    public static let all = FlowSelector(items: [], description: "all flows")

    private init(items: [Item], description: String) {
        self.items = items
        self.description = description
    }

    public static let allowedForms = "a flow number (2), an endpoint (10.0.0.2:80, [::1]:8080), a port (:80) or an address (10.0.0.2), comma-separated"

    public init(parsing text: String) throws {
        var items: [Item] = []
        for raw in text.split(separator: ",", omittingEmptySubsequences: false) {
            let part = String(raw).trimmed(of: " ")
            if part.isEmpty, !text.trimmed(of: " ").isEmpty {
                throw PcapError(.nothingToUse, "'\(text)' has an empty item between its commas; use \(Self.allowedForms)")
            }
            if part.isEmpty { continue }
            if let number = Int(part) {
                guard number >= 1 else {
                    throw PcapError(.nothingToUse, "'\(part)' is not a flow: flows are numbered from 1 (netsim profile and netsim replay --list number them); use \(Self.allowedForms)")
                }
                items.append(.number(number))
            } else if part.hasPrefix(":"), let port = UInt16(part.dropFirst()) {
                items.append(.port(port))
            } else if let address = IPAddressText.parse(part) {
                items.append(.address(address))
            } else if let colon = part.lastIndex(of: ":"), let port = UInt16(part[part.index(after: colon)...]),
                      let address = IPAddressText.parse(String(part[..<colon])) {
                items.append(.endpoint(PacketEndpoint(address: address, port: port)))
            } else {
                throw PcapError(.nothingToUse, "'\(part)' is not a flow selector; use \(Self.allowedForms)")
            }
        }
        guard !items.isEmpty else { throw PcapError(.nothingToUse, "empty flow selector; use \(Self.allowedForms)") }
        self.init(items: items, description: text)
    }

    public func matches(_ flow: TCPFlow) -> Bool {
        items.isEmpty || items.contains { item in
            switch item {
            case .number(let n): flow.number == n
            case .port(let p): flow.client.port == p || flow.server.port == p
            case .address(let a): flow.client.address == a || flow.server.address == a
            case .endpoint(let e): flow.client == e || flow.server == e
            }
        }
    }

    /// The selected flows; throws when none match, naming what the capture has.
    public func select(from capture: Capture) throws -> [TCPFlow] {
        guard !capture.flows.isEmpty else {
            // What the packets were instead (QA 68: "no TCP flows in 2 packets" of UDP).
            let other = SkipReason.allCases.compactMap { reason in capture.skipped[reason.rawValue].map { "\($0) \(reason.rawValue)" } }
            throw PcapError(.nothingToUse, "\(capture.path): no TCP flows in \(capture.packetCount) packet\(capture.packetCount == 1 ? "" : "s")"
                + (other.isEmpty ? "" : " (\(other.joined(separator: ", ")))"))
        }
        let chosen = capture.flows.filter(matches)
        // A flow number the capture does not have is a mistake even beside one it has: `1,99`
        // quietly used flow 1 alone, while `99` alone was refused.
        for case .number(let n) in items where !capture.flows.contains(where: { $0.number == n }) {
            throw PcapError(.nothingToUse, "\(capture.path): there is no flow \(n) ('\(description)'); its flows are numbered 1 to \(capture.flows.count) (netsim profile lists them)")
        }
        guard !chosen.isEmpty else {
            let listing = capture.flows.prefix(10).map(\.description).joined(separator: ", ")
            throw PcapError(.nothingToUse, "\(capture.path): no flow matches '\(description)'; the capture has \(listing)\(capture.flows.count > 10 ? ", …" : "")")
        }
        return chosen
    }
}
