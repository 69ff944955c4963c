import Foundation
import NetsimTLS
import Testing

/// Where a capture's TLS secrets go: beside it, never over it.
@Suite struct KeyLogFileTests {
    /// QA 37: `--pcap x.keys` put the secrets at `x.keys` too, and the capture wrote over them.
    @Test func theSecretsFileIsBesideTheCaptureAndNeverItsPath() {
        #expect(KeyLogFile.url(besidePcap: "/t/run.pcap").path == "/t/run.keys")
        #expect(KeyLogFile.url(besidePcap: "/t/run").path == "/t/run.keys")
        #expect(KeyLogFile.url(besidePcap: "/t/run.cap").path == "/t/run.keys")
        for capture in ["/t/x.keys", "/t/x.KEYS"] {
            #expect(KeyLogFile.url(besidePcap: capture).path == capture + ".keys")
        }
    }
}
