import Foundation
import NetsimLoopback
import Testing
@testable import NetsimPacket

/// The host side routes both of the namespace's addresses (before and after a handover) into
/// the shell's own device, over IPv4 and IPv6; nothing for them goes to another interface.
@Suite(.enabled(if: ShellHarness.canRun, "packet namespace tests need root and /dev/net/tun: \(ShellHarness.missing ?? "")"))
struct PacketNamespaceRouteTests {
    /// `ip route get ADDRESS` on the host: the device it leaves by.
    static func device(for address: String, family: String) throws -> String? {
        let output = try IPRoute.run([family, "route", "get", address])
        let words = output.split(whereSeparator: \.isWhitespace)
        return words.firstIndex(of: "dev").flatMap { $0 + 1 < words.count ? String(words[$0 + 1]) : nil }
    }

    /// QA 38: after a handover, IPv6 connections from ::3 never got an answer: the host routed
    /// ::3 out of eth0 (IPv6 adds no route for a peer's prefix).
    @Test func bothAddressesOfEachFamilyAreRoutedIntoTheShellsDevice() throws {
        let namespace = try PacketNamespace()
        defer { namespace.close() }
        let plan = namespace.plan
        for address in [plan.client, plan.alternateClient] {
            #expect(try Self.device(for: address.description, family: "-4") == namespace.name.hostDevice, "\(address)")
        }
        guard namespace.hasIPv6 else { return }
        for address in [plan.client6, plan.alternateClient6] {
            #expect(try Self.device(for: address.description, family: "-6") == namespace.name.hostDevice, "\(address)")
        }
    }
}
