import NetsimCore

/// How a fault appears in the Toxiproxy-compatible API (`netsim serve`): the toxic type, its
/// attributes, and the fault rules a toxic of that type adds to a proxy.
public struct ToxicMapping: Sendable {
    /// Whether Toxiproxy itself has this toxic, or it is one of netsim's own types.
    public enum Origin: String, Sendable {
        case toxiproxy
        case netsim
    }

    /// One attribute: its name and what its JSON value must be.
    public struct Attribute: Sendable {
        public enum Kind: Sendable, Equatable {
            /// A whole number of milliseconds (Toxiproxy's unit for times); 0 by default.
            case milliseconds
            /// A whole number of bytes; 0 by default.
            case bytes
            /// A JSON string, one of these; the first is the default.
            case choice([String])
        }

        public var name: String
        public var kind: Kind

        public init(_ name: String, _ kind: Kind) {
            self.name = name
            self.kind = kind
        }
    }

    /// The attributes of one toxic, checked against ``attributes`` and with defaults filled in.
    public struct Arguments: Sendable {
        /// Numbers by attribute name (milliseconds or bytes).
        public var numbers: [String: Int64]
        /// Strings by attribute name (choices).
        public var strings: [String: String]
        /// Toxiproxy's `stream`: `up` is client → server.
        public var stream: Direction

        public init(numbers: [String: Int64] = [:], strings: [String: String] = [:], stream: Direction = .down) {
            self.numbers = numbers
            self.strings = strings
            self.stream = stream
        }

        /// For the toxics that act on the answer: a toxic on the `upstream` stream is refused
        /// (it would act server → client whatever it said).
        public func requireDownstream(_ type: String, _ what: String) throws(ToxicMapping.Invalid) {
            guard stream == .down else { throw ToxicMapping.Invalid("\(type) \(what) server → client in netsim: use stream downstream") }
        }

        public func milliseconds(_ name: String) -> Duration { .milliseconds(numbers[name] ?? 0) }
        public func bytes(_ name: String) -> Int { Int(numbers[name] ?? 0) }
        public func string(_ name: String) -> String { strings[name] ?? "" }
    }

    /// What a toxic adds to a proxy: each fault now, or this long after each connection opened.
    public enum Step: Equatable, Sendable {
        case now(FaultKind)
        case after(FaultKind, Duration)
    }

    /// A toxic's attributes that make no sense together; the message is the API's 400.
    public struct Invalid: Error, Sendable {
        public var message: String
        public init(_ message: String) { self.message = message }
    }

    public var type: String
    public var origin: Origin
    public var attributes: [Attribute]
    /// The steps a toxic with these (checked, defaulted) attributes adds.
    public var steps: @Sendable (Arguments) throws(Invalid) -> [Step]

    public init(_ type: String, origin: Origin, attributes: [Attribute] = [],
                steps: @escaping @Sendable (Arguments) throws(Invalid) -> [Step]) {
        self.type = type
        self.origin = origin
        self.attributes = attributes
        self.steps = steps
    }

    /// The toxic as `netsim faults` shows it, e.g. `slow_close (Toxiproxy)`.
    public var label: String { "\(type) (\(origin == .toxiproxy ? "Toxiproxy" : "netsim's own"))" }
}
