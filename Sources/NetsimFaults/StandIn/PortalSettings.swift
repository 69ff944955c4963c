/// How a `portal` fault (a captive portal) behaves. Written `portal[=ANSWER][,tls=BREAK]`,
/// e.g. `portal`, `portal=page`, `portal=redirect,tls=close`.
public struct PortalSettings: Hashable, Sendable, CustomStringConvertible {
    /// What a plain-HTTP request gets.
    public enum Answer: String, Sendable, CaseIterable {
        /// `302 Found` to the portal's login URL (most hotel, airport and café portals).
        case redirect
        /// `200 OK` with the login page in place of the answer (portals that rewrite in place).
        case page
    }

    /// What the portal does to a connection whose first bytes are not plain HTTP — a TLS
    /// ClientHello above all: a portal cannot answer HTTPS without a certificate for the host.
    public enum Break: String, Sendable, CaseIterable {
        /// Reset the connection (a firewall's REJECT with tcp-reset).
        case reset
        /// Close it with a FIN: the client sees the TLS handshake end early.
        case close
        /// Swallow the bytes and never answer (a firewall's DROP): the client times out.
        case hang
        /// Answer the handshake with a self-signed certificate for the name asked, as portals
        /// that intercept HTTPS do: a correct client refuses it; one that accepts it is a
        /// security finding (see `bad-cert`).
        case selfSigned = "self-signed"
    }

    public var answer: Answer
    public var tls: Break

    public init(answer: Answer = .redirect, tls: Break = .reset) {
        self.answer = answer
        self.tls = tls
    }

    /// The host the portal's login page is served from.
    public static let loginHost = "portal.netsim.test"

    public static let allowedForms = "portal, portal=redirect|page, portal=…,tls=reset|close|hang|self-signed (e.g. portal=page,tls=close)"

    /// Parses what follows `portal=`: a comma-separated list of `redirect`/`page` and `tls=…`.
    init?(parsing text: String) {
        self.init()
        var seenAnswer = false
        var seenBreak = false
        for item in text.split(separator: ",", omittingEmptySubsequences: false).map({ String($0) }) {
            if let answer = Answer(rawValue: item), !seenAnswer {
                self.answer = answer
                seenAnswer = true
            } else if item.hasPrefix("tls="), let how = Break(rawValue: String(item.dropFirst(4))), !seenBreak {
                self.tls = how
                seenBreak = true
            } else {
                return nil
            }
        }
    }

    public var description: String { "portal=\(answer.rawValue),tls=\(tls.rawValue)" }
}
