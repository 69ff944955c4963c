import NetsimCore
import NetsimLink
import Testing

@Suite struct LinkConfigurationTests {
    @Test func profilesHaveNetworkLinkConditionersNumbers() {
        func check(_ name: String, down: (Double, Int64), up: (Double, Int64), loss: LossModel? = nil) {
            guard let profile = LinkProfile.named(name) else { Issue.record("missing \(name)"); return }
            #expect(profile.name == name)
            #expect(profile.link.down == DirectionLink(latency: .milliseconds(down.1), bandwidth: DataRate(bitsPerSecond: down.0), loss: loss))
            #expect(profile.link.up == DirectionLink(latency: .milliseconds(up.1), bandwidth: DataRate(bitsPerSecond: up.0), loss: loss))
            #expect(profile.summary.contains("Network Link Conditioner"))
        }
        check("3g", down: (780e3, 100), up: (330e3, 100))
        check("dsl", down: (2e6, 5), up: (256e3, 5))
        check("edge", down: (240e3, 400), up: (200e3, 440))
        check("lte", down: (50e6, 50), up: (10e6, 65))
        check("very-bad-network", down: (1e6, 500), up: (1e6, 500), loss: .bernoulli(.percent(10)))
        #expect(LinkProfile.named("100-loss")?.link == LinkConfiguration(both: DirectionLink(loss: .bernoulli(.certain))))
        // NLC's "High Latency DNS": the link untouched, every DNS answer 3 s late.
        let dns = LinkProfile.named("High Latency DNS")
        #expect(dns?.link == .unimpaired && dns?.dnsDelay == .seconds(3) && dns?.summary.contains("Network Link Conditioner") == true)
        #expect(LinkProfile.all.filter { $0.dnsDelay != nil }.map(\.name) == ["high-latency-dns"])
        #expect(LinkProfile.all.map(\.name) == ["3g", "dsl", "edge", "lte", "very-bad-network", "100-loss", "high-latency-dns"])
    }

    @Test func profileLookupIgnoresCase() {
        #expect(LinkProfile.named("LTE")?.name == "lte")
        #expect(LinkProfile.named("3G")?.name == "3g")
        #expect(LinkProfile.named("Very-Bad-Network")?.name == "very-bad-network")
        #expect(LinkProfile.named("Very Bad Network")?.name == "very-bad-network")
        #expect(LinkProfile.named("wifi") == nil)
        #expect(LinkProfile.named("") == nil)
    }

    @Test func descriptionsAreCompact() {
        #expect(DirectionLink().description == "unimpaired")
        let link = DirectionLink(
            latency: .milliseconds(100), jitter: .milliseconds(10), distribution: .normal,
            bandwidth: .kbit(780), loss: .bernoulli(.percent(2)))
        #expect(link.description == "latency 100ms ±10ms normal, 780kbit, loss 2%")
        #expect(DirectionLink(sliceSize: 100, sliceDelay: .milliseconds(10)).description == "slice 100B every 10ms")
        #expect(DirectionLink(loss: .gilbertElliott(averageLoss: .percent(2), meanBurst: 4)).description.hasPrefix("loss 2% bursty"))
        #expect(LinkConfiguration.unimpaired.description == "unimpaired")
        #expect(LinkConfiguration(both: link).description == "both ways: \(link)")
        #expect(LinkConfiguration(up: DirectionLink(), down: link).description == "up: unimpaired; down: \(link)")
    }

    @Test func impairedOnlyWhenTimingOrFragmentationChanges() {
        #expect(!DirectionLink().isImpaired)
        #expect(!DirectionLink(loss: .bernoulli(.zero)).isImpaired)
        #expect(DirectionLink(latency: .milliseconds(1)).isImpaired)
        #expect(DirectionLink(jitter: .milliseconds(1)).isImpaired)
        #expect(DirectionLink(bandwidth: .gbit(10)).isImpaired)
        #expect(DirectionLink(loss: .bernoulli(.percent(0.1))).isImpaired)
        #expect(DirectionLink(sliceSize: 10).isImpaired)
        #expect(!LinkConfiguration.unimpaired.isImpaired)
        #expect(LinkConfiguration(down: DirectionLink(latency: .milliseconds(1))).isImpaired)
        #expect(LinkProfile.all.allSatisfy { $0.link.isImpaired || $0.dnsDelay != nil })
    }

    @Test func roundTripAndSubscript() {
        var config = LinkProfile.named("edge")!.link
        #expect(config.roundTripNanoseconds == 840 * ms)
        #expect(config[.up] == config.up && config[.down] == config.down)
        config[.up] = DirectionLink()
        #expect(config.up == DirectionLink())
        #expect(config.roundTripNanoseconds == 400 * ms)
    }
}
