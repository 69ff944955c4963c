import Testing
@Test func bootstrap() {}
