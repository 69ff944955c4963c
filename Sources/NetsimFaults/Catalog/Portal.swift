import Foundation
import NetsimCore

/// `portal[=redirect|page][,tls=reset|close|hang|self-signed]`: a captive portal. The relay
/// answers plain-HTTP requests itself with a redirect to a login page, or the page itself
/// (connectivity probes included), and breaks TLS — or answers it with a self-signed
/// certificate, as portals that intercept HTTPS do; lifted by a `login` (or by removing the
/// fault), after which requests go upstream again.
public struct Portal: Fault {
    public static let name = "portal"
    public static let syntax = "[=redirect|page][,tls=reset|close|hang|self-signed]"
    public static let example = "portal=page,tls=close"
    public static let scope = FaultScope.request
    public static let summary = "plain HTTP gets a login page or a redirect to it; TLS is reset, closed, hangs or gets a self-signed certificate"
    public static let toxic: ToxicMapping? = ToxicMapping(
        "portal", origin: .netsim,
        attributes: [.init("answer", .choice(PortalSettings.Answer.allCases.map(\.rawValue))),
                     .init("tls", .choice(PortalSettings.Break.allCases.map(\.rawValue)))]
    ) { arguments throws(ToxicMapping.Invalid) in
        [.now(.portal(PortalSettings(answer: PortalSettings.Answer(rawValue: arguments.string("answer")) ?? .redirect,
                                     tls: PortalSettings.Break(rawValue: arguments.string("tls")) ?? .reset)))]
    }

    public var settings: PortalSettings
    public init(_ settings: PortalSettings = PortalSettings()) { self.settings = settings }
    public init(argument: String?) throws(FaultArgumentError) {
        guard let argument else {
            settings = PortalSettings()
            return
        }
        guard let settings = PortalSettings(parsing: argument) else {
            throw FaultArgumentError("a captive portal (\(PortalSettings.allowedForms))")
        }
        self.settings = settings
    }
    public var argument: String? { "\(settings.answer.rawValue),tls=\(settings.tls.rawValue)" }

    public func makeEffect() -> any FaultEffect { Effect(settings: settings) }

    struct Effect: FaultEffect, StandIn {
        let settings: PortalSettings
        var standIn: (any StandIn)? { self }
        var faultName: FaultName { FaultName(Portal.name) }

        mutating func applied<Chunk: ByteChunk>(to connection: inout ConnectionMachine<Chunk>, atAccept: Bool) -> EffectLifetime {
            let answer = settings.answer == .redirect ? "a redirect to its login page" : "its login page"
            let tls = settings.tls == .selfSigned ? "answers TLS with a self-signed certificate" : "breaks TLS (\(settings.tls.rawValue))"
            connection.fire((atAccept ? "no upstream connect; " : "")
                + "a captive portal answers plain HTTP with \(answer) and \(tls) until a login")
            return .stays
        }

        func refuses(firstBytes: [UInt8]) -> StandInRefusal? {
            guard firstBytes.first == 0x16 else { return nil }
            let host = TLSClientHello.serverName(in: firstBytes).map { " for \($0)" } ?? ""
            return refusal("a TLS ClientHello\(host)")
        }

        func refusesUnparseable() -> StandInRefusal? { refusal("bytes that are not HTTP", tls: false) }

        private func refusal(_ what: String, tls: Bool = true) -> StandInRefusal {
            switch settings.tls {
            case .reset: StandInRefusal(.close(.rst), what: what)
            case .close: StandInRefusal(.close(.fin), what: what)
            case .hang: StandInRefusal(.hang, what: what)
            // Only a handshake can be answered with a certificate; other bytes end with a FIN.
            case .selfSigned: StandInRefusal(tls ? .impersonate(.selfSigned) : .close(.fin), what: what)
            }
        }

        func reply(to request: HTTPRequestSummary, now: Date) -> StandInReply {
            let answer = PortalAnswer(request, settings: settings, now: now)
            let target = PortalAnswer.target(of: request)
            let what = "\(request.method) \(request.uri)"
            let detail = answer.probe.map { "\($0): \(what) to \(target.host)" } ?? "\(what) to \(target.host.isEmpty ? "no Host" : target.host)"
            return .respond(answer.response, detail: "answered \(detail) with \(answer.response.summary)")
        }
    }
}

extension FaultKind {
    public static func portal(_ settings: PortalSettings = PortalSettings()) -> FaultKind { FaultKind(Portal(settings)) }

    /// True for a captive portal (lifted by a `login`).
    public var isPortal: Bool { fault is Portal }

    /// True for a portal that answers TLS handshakes with a certificate of its own.
    public var answersTLSItself: Bool { (fault as? Portal)?.settings.tls == .selfSigned }
}
