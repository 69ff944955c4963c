// The relay's API speaks the fault catalog's vocabulary (FaultRule, FaultKind, …): users of the
// relay get it with `import NetsimRelay`.
@_exported import NetsimFaults
