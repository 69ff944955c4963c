import NetsimCore

/// Named presets after Apple's Network Link Conditioner.
///
/// The numbers are the ones Network Link Conditioner ships, so a result measured with netsim can
/// be compared with one measured on a Mac or an iPhone under the same preset. "Down" is
/// server→client, "up" client→server, as in NLC's downlink/uplink.
public struct LinkProfile: Sendable {
    /// Lower-case, dash-separated; what `--profile` accepts.
    public var name: String
    /// One line for `--help` and listings, naming the NLC preset it follows.
    public var summary: String
    public var link: LinkConfiguration
    /// Added to every DNS answer where netsim resolves (`netsim shell`'s DNS server, the forward
    /// proxy's lookups); nil: DNS is left alone. The relay resolves nothing for the client.
    public var dnsDelay: Duration?

    public init(name: String, summary: String, link: LinkConfiguration, dnsDelay: Duration? = nil) {
        self.name = name
        self.summary = summary
        self.link = link
        self.dnsDelay = dnsDelay
    }

    public static let all: [LinkProfile] = [
        asymmetric(
            "3g", "Network Link Conditioner's \"3G\" preset",
            down: (.kbit(780), 100), up: (.kbit(330), 100)),
        asymmetric(
            "dsl", "Network Link Conditioner's \"DSL\" preset",
            down: (.mbit(2), 5), up: (.kbit(256), 5)),
        asymmetric(
            "edge", "Network Link Conditioner's \"Edge\" preset",
            down: (.kbit(240), 400), up: (.kbit(200), 440)),
        asymmetric(
            "lte", "Network Link Conditioner's \"LTE\" preset",
            down: (.mbit(50), 50), up: (.mbit(10), 65)),
        asymmetric(
            "very-bad-network", "Network Link Conditioner's \"Very Bad Network\" preset",
            down: (.mbit(1), 500), up: (.mbit(1), 500), loss: .bernoulli(.percent(10))),
        LinkProfile(
            name: "100-loss",
            summary: "Network Link Conditioner's \"100% Loss\" preset: nothing gets through, connects time out",
            link: LinkConfiguration(both: DirectionLink(loss: .bernoulli(.certain)))),
        LinkProfile(
            name: "high-latency-dns",
            summary: "Network Link Conditioner's \"High Latency DNS\" preset: every DNS answer 3 s late, the link itself unimpaired (netsim shell, netsim proxy)",
            link: .unimpaired, dnsDelay: .seconds(3)),
    ]

    /// The profile called `name`, ignoring case; spaces and underscores count as dashes, so
    /// `"Very Bad Network"` finds `very-bad-network`.
    public static func named(_ name: String) -> LinkProfile? {
        let wanted = String(name.lowercased().map { $0 == " " || $0 == "_" ? "-" : $0 })
        return all.first { $0.name == wanted }
    }

    private static func asymmetric(
        _ name: String,
        _ preset: String,
        down: (rate: DataRate, delayMilliseconds: Int64),
        up: (rate: DataRate, delayMilliseconds: Int64),
        loss: LossModel? = nil
    ) -> LinkProfile {
        func direction(_ d: (rate: DataRate, delayMilliseconds: Int64)) -> DirectionLink {
            DirectionLink(latency: .milliseconds(d.delayMilliseconds), bandwidth: d.rate, loss: loss)
        }
        return LinkProfile(name: name, summary: preset, link: LinkConfiguration(up: direction(up), down: direction(down)))
    }
}
