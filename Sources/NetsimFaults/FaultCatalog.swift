import NetsimCore

/// Every fault netsim knows, in the order help texts list them. Adding a fault is adding its file
/// to `Catalog/` and its type here; every list, parser and table below derives from this one.
public enum FaultCatalog {
    public static let all: [any Fault.Type] = [
        Refuse.self, Reject.self, SlowConnect.self,
        Stale.self, Blackhole.self, Stall.self, Drop.self, Fin.self, Rst.self, IdleClose.self, SlowClose.self,
        Limit.self, Cut.self, Empty.self, Garbage.self, TLSStall.self, BadCert.self,
        Outage.self, Portal.self, GoAway.self, RstStream.self, MaxStreams.self,
        Offline.self, Handover.self, UDPBlock.self,
    ]

    /// Every fault name, for "did you mean".
    public static var names: [String] { all.map { $0.name } }

    /// The names of the faults a packet path can inject (``FaultPaths/packet``), for help and errors.
    public static var packetFaultNames: String {
        all.filter { $0.paths.contains(.packet) }.map { $0.name }.joined(separator: ", ")
    }

    /// The fault called `name`.
    public static func named(_ name: String) -> (any Fault.Type)? { all.first { $0.name == name } }

    /// Every form a fault can be written in, with examples: the text of errors and help. The
    /// faults only a packet link takes come last, said as such: `netsim relay --help` offered
    /// `offline` as one of its own, and the relay then refused it.
    public static let allowedForms: String = {
        let relay = all.filter { $0.paths.contains(.relay) }
        let packetOnly = all.filter { !$0.paths.contains(.relay) }
        let forms = relay.map { $0.name + $0.syntax }.joined(separator: ", ")
        let examples = relay.filter { !$0.syntax.isEmpty }.map { $0.example }.joined(separator: ", ")
        let packet = packetOnly.map { $0.name + $0.syntax }.joined(separator: ", ")
        return "one of \(forms) (e.g. \(examples)); a packet link (netsim shell, link mode: packet) also takes \(packet)"
    }()

    /// How one fault is written: `stale[=fin|rst] (e.g. stale=rst)`.
    public static func forms(of type: any Fault.Type) -> String {
        type.syntax.isEmpty ? type.name : "\(type.name)\(type.syntax) (e.g. \(type.example))"
    }

    /// Parses `NAME[=ARGUMENT]`, e.g. `stale=rst`, `idle-close=5s`, `limit=10KB`. The name also
    /// ends at a comma followed by an option (`KEY=VALUE`), for the forms whose first part is
    /// optional: `portal,tls=hang` is `portal=redirect,tls=hang`, as its syntax
    /// `portal[=redirect|page][,tls=…]` reads.
    public static func parse(_ text: String) throws(UnitParseError) -> FaultKind {
        var end = text.firstIndex(of: "=") ?? text.endIndex
        if let comma = text.firstIndex(of: ","), comma < end, text[comma...].contains("=") { end = comma }
        let name = String(text[..<end])
        let argument = end == text.endIndex ? nil : String(text[text.index(after: end)...])
        guard let type = named(name) else {
            throw UnitParseError(input: text, expected: "a fault", allowedForms: allowedForms)
        }
        do {
            return try make(type, argument: argument)
        } catch {
            // The name is right: its own forms, not the whole catalog (a thousand characters
            // for `stale=rts`).
            throw UnitParseError(input: text, expected: error.expected, allowedForms: forms(of: type))
        }
    }

    private static func make<F: Fault>(_ type: F.Type, argument: String?) throws(FaultArgumentError) -> FaultKind {
        FaultKind(try F(argument: argument))
    }

    /// The fault whose Toxiproxy toxic is `type`.
    public static func toxic(_ type: String) -> ToxicMapping? {
        all.lazy.compactMap { $0.toxic }.first { $0.type == type }
    }

    /// Every toxic type a fault maps to.
    public static var toxicTypes: [ToxicMapping] { all.compactMap { $0.toxic } }
}
