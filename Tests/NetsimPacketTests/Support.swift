import Foundation
#if canImport(Glibc)
import Glibc
#endif

func getpidSafe() -> Int32 { getpid() }
