import Foundation
import NetsimCore

/// `outage=KIND`: the server is down and something in front of it answers. The relay answers
/// HTTP requests itself instead of forwarding them: new connections never connect upstream; on
/// open ones the next request is answered by the relay.
public struct Outage: Fault {
    public static let name = "outage"
    public static let syntax = "=503|500|error-page|truncated|no-headers"
    public static let example = "outage=503"
    public static let scope = FaultScope.request
    public static let summary = "requests get 503 (Retry-After: 2), 500, a 200 error page, a truncated body, or no answer"
    public static let toxic: ToxicMapping? = ToxicMapping("outage", origin: .netsim, attributes: [.init("kind", .choice(OutageKind.allCases.map(\.rawValue)))]) {
        arguments throws(ToxicMapping.Invalid) in [.now(.outage(OutageKind(rawValue: arguments.string("kind")) ?? .serviceUnavailable))]
    }

    public var kind: OutageKind
    public init(_ kind: OutageKind) { self.kind = kind }
    public init(argument: String?) throws(FaultArgumentError) {
        let text = try FaultArgumentError.required(argument, for: Self.name)
        guard let kind = OutageKind(rawValue: text) else {
            throw FaultArgumentError("an outage (outage=503, 500, error-page, truncated or no-headers)")
        }
        self.kind = kind
    }
    public var argument: String? { kind.rawValue }

    public func makeEffect() -> any FaultEffect { Effect(kind: kind) }

    struct Effect: FaultEffect, StandIn {
        let kind: OutageKind
        var standIn: (any StandIn)? { self }
        var faultName: FaultName { FaultName(Outage.name) }

        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
            connection.fire((atAccept ? "no upstream connect; " : "") + "the relay answers requests itself (\(kind.rawValue)) until the fault lifts")
            return .stays
        }

        func refuses(firstBytes: [UInt8]) -> StandInRefusal? { nil }
        func refusesUnparseable() -> StandInRefusal? { nil }

        func reply(to request: HTTPRequestSummary, now: Date) -> StandInReply {
            let what = "\(request.method) \(request.uri)"
            if kind == .noHeaders { return .silent(detail: "accepted \(what); the response headers never come") }
            let response = OutageAnswer.response(kind, now: now)
            return .respond(response, detail: "answered \(what) with \(response.summary)", truncated: kind == .truncated)
        }
    }
}

/// How the relay answers requests during an `outage`.
public enum OutageKind: String, Sendable, CaseIterable {
    /// `503 Service Unavailable` with `Retry-After: 2`.
    case serviceUnavailable = "503"
    /// `500 Internal Server Error`.
    case internalError = "500"
    /// `200 OK` with an HTML error page, `Last-Modified` a year ago and no `Cache-Control`: a
    /// heuristic cache keeps it (the cache-poisoning incident).
    case errorPage = "error-page"
    /// `200 OK` whose body stops short of its `Content-Length`, then FIN.
    case truncated
    /// The request is accepted and the response headers never come.
    case noHeaders = "no-headers"
}

extension FaultKind {
    public static func outage(_ kind: OutageKind) -> FaultKind { FaultKind(Outage(kind)) }
}
