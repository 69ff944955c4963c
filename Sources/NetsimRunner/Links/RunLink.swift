import NetsimFaults
import NetsimLink
import NetsimRelay

/// What a scenario's timeline acts on between the client and the upstream: the relay (link
/// mode relay) or a packet path (link mode packet). The timeline's `fault`, `clear`, `link` and
/// `login` steps go through this, so ``TimelinePlayer`` plays either mode the same way.
protocol RunLink: Sendable {
    /// Starts `rule`'s fault now (the validator has checked it can act on this link).
    func addFault(_ rule: FaultRule) async throws -> FaultID
    func removeFault(_ id: FaultID) async
    func removeAllFaults() async
    /// Replaces the link from now on (a timeline `link` step).
    func setLink(_ link: LinkConfiguration) async
    /// The user signs in at the captive portal (relay only: the validator refuses `login` elsewhere).
    func signIn() async
}

extension Relay: RunLink {
    func signIn() async { _ = await login() }
}
