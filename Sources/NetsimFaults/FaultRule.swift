import NetsimCore

/// Which connections a fault applies to, relative to the moment it activates.
public enum FaultTarget: String, Sendable, CaseIterable {
    /// Connections open when it activates and those opened afterwards.
    case all
    /// Only connections opened after it activates.
    case new
    /// Only connections open when it activates.
    case existing
}

/// When a fault acts.
public enum FaultTrigger: Equatable, Sendable {
    /// As soon as it is added.
    case immediately
    /// This long after the relay started.
    case at(Duration)
    /// This long after each connection opened (for a connection already open when the rule is
    /// added: this long after it was added).
    case after(Duration)
}

/// A fault with its timing, targets and probability.
public struct FaultRule: Equatable, Sendable, CustomStringConvertible {
    public var kind: FaultKind
    public var trigger: FaultTrigger
    public var target: FaultTarget
    /// Each targeted connection is affected with this probability (decided from the relay's seed).
    public var probability: Probability
    /// Lift the fault this long after it activates (nil: it stays until removed).
    public var lasts: Duration?

    public init(
        _ kind: FaultKind, trigger: FaultTrigger = .immediately, target: FaultTarget = .all,
        probability: Probability = .certain, lasts: Duration? = nil
    ) {
        self.kind = kind
        self.trigger = trigger
        self.target = target
        self.probability = probability
        self.lasts = lasts
    }

    /// Checks combinations that cannot mean anything on `path` (the relay, or a scenario's packet
    /// link); the message says what to write instead.
    public func validate(on path: FaultPaths = .relay) throws {
        if path == .packet { return try validateOnPacketPath() }
        if !kind.paths.contains(.relay) {
            throw FaultRuleError("\(kind.name) is a packet-only fault (it acts on packets, which a relay never sees): use netsim shell --fault \(kind.name), or link mode packet")
        }
        if kind.actsOnlyAtAccept {
            if target == .existing {
                throw FaultRuleError("\(kind.name) acts on new connections only; use --fault-target all or new")
            }
            if case .after = trigger {
                throw FaultRuleError("\(kind.name) acts when a connection is accepted; use --fault-at instead of --fault-after")
            }
        }
        if case .after = trigger, target == .new {
            // Meaningful: only connections opened after the rule was added.
        }
    }

    public var description: String {
        var text = kind.description
        switch trigger {
        case .immediately: break
        case .at(let d): text += " at \(d.compactDescription)"
        case .after(let d): text += " after \(d.compactDescription) per connection"
        }
        if target != .all { text += " on \(target.rawValue) connections" }
        if probability.fraction < 1 { text += " with probability \(probability)" }
        if let lasts { text += " for \(lasts.compactDescription)" }
        return text
    }
}

extension FaultRule {
    /// A packet path acts on every packet of the namespace from the moment the fault starts:
    /// it has no per-connection trigger, draw or target (`stale` acts on the connections open
    /// when it starts, as `target: existing` says).
    private func validateOnPacketPath() throws {
        let name = kind.name
        guard kind.paths.contains(.packet) else {
            let acts = kind.scope == .request ? "HTTP requests" : "byte streams"
            throw FaultRuleError("\(name) acts on \(acts) at a relay, and link mode packet injects only \(FaultCatalog.packetFaultNames)")
        }
        if let stale = kind.fault as? Stale, stale.close == .fin {
            throw FaultRuleError("stale=fin is a relay fault (a relay closes its own leg with FIN); on a packet link the host side forgets the connection and answers with RST: write stale or stale=rst")
        }
        if probability.fraction < 1 {
            throw FaultRuleError("\(name) on a packet link acts on every packet, not on a share of connections: drop 'probability'", key: "probability")
        }
        if case .after = trigger {
            throw FaultRuleError("\(name) on a packet link starts when its step fires, not per connection: give the step an 'at' instead of 'after_open'", key: "after_open")
        }
        if target == .new || (target == .existing && kind.fault as? Stale == nil) {
            throw FaultRuleError("\(name) on a packet link acts on every packet from its start: drop 'target' (only stale, which forgets the connections open when it starts, takes 'target: existing')", key: "target")
        }
        if name == Handover.name, let lasts {
            throw FaultRuleError("a handover happens at one instant: drop 'for: \(lasts.compactDescription)' (a second handover step moves the address again)", key: "for")
        }
    }
}

/// A fault rule that cannot be applied as written.
public struct FaultRuleError: Error, CustomStringConvertible, Sendable {
    public var description: String
    /// The scenario key the error is about (`probability`, `after_open`, `target`, `for`), so a
    /// scenario's error points at it; nil: the fault itself.
    public var key: String?
    public init(_ description: String, key: String? = nil) {
        self.description = description
        self.key = key
    }
}

/// Identifies a fault added to a running relay, to remove it later.
public struct FaultID: Hashable, Sendable, CustomStringConvertible {
    public var raw: UInt64
    public init(raw: UInt64) { self.raw = raw }
    public var description: String { "fault#\(raw)" }
}
