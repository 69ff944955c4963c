import NIOConcurrencyHelpers
import NetsimCore

/// Numbers connections from 1, for one relay or for several whose event logs are read together:
/// `netsim proxy`'s relays (one per destination, through ``RelayTimeline``) and `netsim serve`'s
/// proxies, whose relays come and go as proxies are disabled, enabled and made again. Each relay
/// numbering its own from 1 put several `conn 1` in one file (QA 67).
public final class ConnectionNumbering: Sendable {
    private let next = NIOLockedValueBox<UInt64>(1)

    public init() {}

    /// The next connection's id.
    func allocate() -> ConnectionID {
        next.withLockedValue { next in
            defer { next += 1 }
            return ConnectionID(next)
        }
    }
}
