import NetsimCore

/// Where in a connection's life a fault acts.
public enum FaultScope: String, Sendable, CaseIterable {
    /// When a connection is accepted (refuse, reject, slow-connect): connections already open
    /// are untouched.
    case accept
    /// On the bytes and closes of open connections (and of new ones while it lasts).
    case connection
    /// On the HTTP requests of a connection: the relay answers them in the server's place.
    case request
}

/// One kind of fault: its vocabulary (name, argument syntax, what a client sees, its Toxiproxy
/// toxic) and what it does to a connection.
///
/// A fault is one file in `Sources/NetsimFaults/Catalog/` and one entry in ``FaultCatalog/all``;
/// everything that lists, parses or documents faults (the CLI's `--fault`, the scenario parser and
/// its "did you mean", the Toxiproxy toxic types, `netsim faults`, docs/faults.md) is derived from
/// the catalog. See docs/writing-a-fault.md.
public protocol Fault: Sendable, Hashable {
    /// The name as written on the command line and in scenarios (`stale`, `slow-connect`).
    static var name: String { get }
    /// The argument syntax after the name, e.g. `[=fin|rst]` or `=DURATION` ("" for none).
    static var syntax: String { get }
    /// A typical use, e.g. `stale=rst`.
    static var example: String { get }
    /// When it acts.
    static var scope: FaultScope { get }
    /// One line: what a client sees.
    static var summary: String { get }
    /// Its Toxiproxy toxic, if it has one.
    static var toxic: ToxicMapping? { get }
    /// Which of netsim's paths can inject it: the relay's byte streams, the shell's packet path, or both.
    static var paths: FaultPaths { get }

    /// Parses the text after `=` (nil when there is none).
    init(argument: String?) throws(FaultArgumentError)
    /// The argument as written back (nil: none), so that `description` parses again.
    var argument: String? { get }

    /// The fault's state on one connection it acts on.
    func makeEffect() -> any FaultEffect
}

extension Fault {
    /// The name as events carry it.
    public static var faultName: FaultName { FaultName(name) }
    public static var syntax: String { "" }
    public static var example: String { name + syntax }
    public static var toxic: ToxicMapping? { nil }
    public static var paths: FaultPaths { .relay }
    public var argument: String? { nil }
}

/// Where a fault can be injected. Some faults exist only where netsim sees packets (an interface
/// going down, an address changing, UDP); some have a meaning in both places.
public struct FaultPaths: OptionSet, Hashable, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// `netsim relay`, `netsim proxy`, scenarios in relay mode: the fault acts on byte streams.
    public static let relay = FaultPaths(rawValue: 1)
    /// `netsim shell` (link mode packet): the fault acts on the namespace's packets.
    public static let packet = FaultPaths(rawValue: 2)

    /// `relay`, `packet` or `relay, packet`, as `netsim faults` prints it.
    public var label: String { [(Self.relay, "relay"), (Self.packet, "packet")].filter { contains($0.0) }.map(\.1).joined(separator: ", ") }
}

/// A fault's argument that does not parse: what was expected, e.g. "a stale close (stale=fin or
/// stale=rst)". The catalog turns it into a ``UnitParseError`` listing every fault.
public struct FaultArgumentError: Error, Sendable, Equatable {
    public var expected: String
    public init(_ expected: String) { self.expected = expected }

    /// The argument was missing: `limit` needs a value.
    static func missing(_ name: String) -> FaultArgumentError { FaultArgumentError("a complete fault (\(name) needs a value)") }
    /// An argument was given to a fault that takes none.
    static func unexpected(_ name: String) -> FaultArgumentError { FaultArgumentError("a fault (\(name) takes no value)") }

    /// The argument, which must be present.
    static func required(_ argument: String?, for name: String) throws(FaultArgumentError) -> String {
        guard let argument, !argument.isEmpty else { throw missing(name) }
        return argument
    }

    /// Checks that a fault that takes no argument got none.
    static func none(_ argument: String?, for name: String) throws(FaultArgumentError) {
        if argument != nil { throw unexpected(name) }
    }

    /// Parses an optional direction, `up` or `down` (nil: both ways), as `stall` and `drop` take
    /// it; `what` names the direction in the message (`a stalled direction`).
    static func direction(_ argument: String?, for name: String, what: String) throws(FaultArgumentError) -> Direction? {
        switch argument {
        case nil: return nil
        case "up": return .up
        case "down": return .down
        default: throw FaultArgumentError("\(what) (\(name), \(name)=up or \(name)=down)")
        }
    }

    /// Splits `VALUE,OPTION` where OPTION must be one of `options`: a wrong one is named as
    /// such (`cut=1KB,foo` said "is not a byte count", blaming the part that was right).
    /// `value` describes the part before the comma for the message.
    static func option(_ text: String, for name: String, value: String, options: [String]) throws(FaultArgumentError) -> (String, String?) {
        guard let comma = text.lastIndex(of: ",") else { return (text, nil) }
        let option = String(text[text.index(after: comma)...])
        guard options.contains(option) else {
            throw FaultArgumentError("\(value), then optionally \(options.map { "," + $0 }.joined(separator: " or ")) ('\(option)' after the comma is neither)")
        }
        return (String(text[..<comma]), option)
    }

    /// Parses a unit value (`Duration`, `ByteCount`), keeping the unit's own message.
    static func unit<T>(_ argument: String?, for name: String, _ parse: (String) throws -> T) throws(FaultArgumentError) -> T {
        let text = try required(argument, for: name)
        do {
            return try parse(text)
        } catch let error as UnitParseError {
            throw FaultArgumentError(error.expected + " (\(error.allowedForms))")
        } catch {
            throw FaultArgumentError("a value for \(name)")
        }
    }
}

/// A fault of any kind, as rules, scenarios and the API carry it. Two are equal when they are the
/// same fault with the same argument.
public struct FaultKind: Hashable, Sendable, CustomStringConvertible {
    /// The fault itself.
    public let fault: any Fault

    public init(_ fault: some Fault) { self.fault = fault }

    /// Parses `NAME[=ARGUMENT]` against the catalog.
    public init(parsing text: String) throws(UnitParseError) { self = try FaultCatalog.parse(text) }

    public var name: String { type(of: fault).name }
    /// The name as events carry it.
    public var faultName: FaultName { FaultName(name) }
    public var scope: FaultScope { type(of: fault).scope }
    public var description: String { fault.argument.map { "\(name)=\($0)" } ?? name }

    /// The fault as its own type, if it is one.
    public func `as`<F: Fault>(_ type: F.Type) -> F? { fault as? F }

    /// Where it can be injected.
    public var paths: FaultPaths { type(of: fault).paths }

    /// Faults that act when a connection is accepted, not on connections already open.
    public var actsOnlyAtAccept: Bool { scope == .accept }

    public static func == (a: FaultKind, b: FaultKind) -> Bool { AnyHashable(a.fault) == AnyHashable(b.fault) }
    public func hash(into hasher: inout Hasher) { hasher.combine(AnyHashable(fault)) }
}
