import Testing
@testable import Transfer

@Suite struct AddressPolicyTests {
    private func address(_ text: String) throws -> IPAddress {
        try #require(IPAddress(text), "\(text) should parse")
    }

    /// One address at each edge of every range the default policy refuses.
    static let blocked = [
        "0.0.0.0", "0.255.255.255",                     // 0.0.0.0/8
        "10.0.0.0", "10.255.255.255",                   // RFC 1918
        "172.16.0.1", "172.31.255.255",
        "192.168.0.1", "192.168.255.255",
        "127.0.0.1", "127.255.255.254",                 // loopback
        "169.254.0.1", "169.254.169.254",               // link-local, cloud metadata
        "100.64.0.1", "100.127.255.255",                // CGNAT
        "198.18.0.1", "198.19.255.255",                 // benchmarking
        "224.0.0.1", "239.255.255.255",                 // multicast
        "240.0.0.1", "255.255.255.255",                 // reserved and broadcast
        "192.0.2.1", "198.51.100.1", "203.0.113.1",     // documentation
        "192.0.0.1",                                    // IETF protocol assignments
        "::", "::1",                                    // unspecified, loopback
        "fc00::1", "fdff:ffff::1",                      // ULA
        "fe80::1", "febf::1",                           // link-local
        "ff02::1", "ff0e::1",                           // multicast
        "2001:db8::1", "fec0::1", "100::1",             // documentation, site-local, discard
        "::ffff:127.0.0.1", "::ffff:10.1.2.3", "[::ffff:169.254.169.254]",  // IPv4-mapped
        "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe",        // NAT64
        "64:ff9b:1::a00:1", "64:ff9b:1:ffff::7f00:1",   // local-use NAT64
        "fe80::1%eth0", "[fe80::1%25lo]",               // link-local with a zone
        "2002:7f00:1::1", "2002:c0a8:101::",            // 6to4
    ]

    static let allowed = [
        "8.8.8.8", "1.1.1.1", "9.255.255.255", "11.0.0.0", "172.15.255.255", "172.32.0.0",
        "192.167.255.255", "192.169.0.0", "100.63.255.255", "100.128.0.0", "198.17.255.255",
        "198.20.0.0", "223.255.255.255", "126.255.255.255", "128.0.0.0", "169.253.255.255",
        "2606:4700:4700::1111", "2001:4860:4860::8888", "[2a00:1450:4001::200e]",
        "fbff:ffff::1", "fe7f::1", "2400:cb00::1",
        "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1",
    ]

    @Test(arguments: blocked)
    func defaultPolicyRefuses(_ text: String) throws {
        #expect(!AddressPolicy.publicOnly.permits(try address(text)))
        #expect(AddressPolicy.allowAll.permits(try address(text)))
    }

    @Test(arguments: allowed)
    func defaultPolicyAllowsPublicUnicast(_ text: String) throws {
        #expect(AddressPolicy.publicOnly.permits(try address(text)))
    }

    @Test func allowedNetworksOpenHolesInTheDefault() throws {
        let policy = AddressPolicy(
            allowPrivate: false,
            allowedNetworks: [try #require(CIDR("10.0.0.0/8")), try #require(CIDR("127.0.0.2/32")),
                              try #require(CIDR("fd00::/8"))])
        #expect(policy.permits(try address("10.1.2.3")))
        #expect(policy.permits(try address("127.0.0.2")))
        #expect(policy.permits(try address("fd12::1")))
        #expect(policy.permits(try address("::ffff:10.9.9.9")))  // mapped form of an allowed address
        #expect(policy.permits(try address("8.8.8.8")))
        #expect(!policy.permits(try address("127.0.0.1")))
        #expect(!policy.permits(try address("192.168.1.1")))
        #expect(!policy.permits(try address("fc00::1")))
    }

    /// A connection to 0.0.0.0/8 or :: reaches loopback: allowing those networks alone allows nothing.
    @Test func thisHostCountsAsLoopback() throws {
        let thisHost = AddressPolicy(allowPrivate: false, allowedNetworks: [try #require(CIDR("0.0.0.0/8")), try #require(CIDR("::/128"))])
        for text in ["0.0.0.0", "0.1.2.3", "::", "::ffff:0.0.0.0"] {
            #expect(!thisHost.permits(try address(text)), "\(text)")
        }
        let loopback = AddressPolicy(allowPrivate: false, allowedNetworks: [try #require(CIDR("127.0.0.0/8")), try #require(CIDR("::1"))])
        for text in ["0.0.0.0", "0.1.2.3", "::", "::ffff:0.0.0.0"] {
            #expect(loopback.permits(try address(text)), "\(text)")
        }
    }

    @Test func zonesAreDropped() throws {
        #expect(try address("fe80::1%eth0") == address("fe80::1"))
        #expect(try address("[fe80::1%25eth0]") == address("fe80::1"))
    }

    @Test func embeddedIPv4IsExtracted() throws {
        #expect(try address("::ffff:1.2.3.4").embeddedIPv4 == address("1.2.3.4"))
        #expect(try address("64:ff9b::102:304").embeddedIPv4 == address("1.2.3.4"))
        #expect(try address("2002:102:304:5::6").embeddedIPv4 == address("1.2.3.4"))
        #expect(try address("2606:4700::1").embeddedIPv4 == nil)
        #expect(try address("1.2.3.4").embeddedIPv4 == nil)
    }

    @Test(arguments: ["1.2.3", "1.2.3.4.5", "01.2.3.4", "1.2.3.256", "1.2.3.-1", "0x7f.0.0.1", " 1.2.3.4",
                      "", "[1.2.3.4]", "%eth0", "::g", "1::2::3", "[::1", "localhost"])
    func rejectsMalformedAddresses(_ text: String) {
        #expect(IPAddress(text) == nil)
    }

    @Test func parsesAndPrintsAddresses() throws {
        #expect(try address("[::1]").description == "::1")
        #expect(try address("::FFFF:1.2.3.4").description == "::ffff:1.2.3.4")
        #expect(try address("2001:0db8:0000::0001").description == "2001:db8::1")
        #expect(try address("192.168.0.1").description == "192.168.0.1")
    }

    @Test func parsesCIDRs() throws {
        let network = try #require(CIDR("10.0.0.0/8"))
        #expect(network.contains(try address("10.200.3.4")))
        #expect(!network.contains(try address("11.0.0.0")))
        #expect(!network.contains(try address("::ffff:10.0.0.1")))  // another family

        let host = try #require(CIDR("127.0.0.2"))
        #expect(host.description == "127.0.0.2/32")
        #expect(host.contains(try address("127.0.0.2")))
        #expect(!host.contains(try address("127.0.0.3")))

        #expect(try #require(CIDR("::1")).description == "::1/128")
        #expect(try #require(CIDR("fc00::/7")).contains(try address("fdff::1")))
        #expect(try #require(CIDR("10.1.2.3/8")).description == "10.0.0.0/8")
        #expect(try #require(CIDR("0.0.0.0/0")).contains(try address("8.8.8.8")))
        #expect(try #require(CIDR("::/0")).contains(try address("2606:4700::1")))
        #expect(try #require(CIDR("[2001:db8::]/32")).contains(try address("2001:db8:ffff::1")))
    }

    @Test(arguments: ["10.0.0.0/33", "::/129", "10.0.0.0/", "/8", "10.0.0.0/-1", "10.0.0.0/+8",
                      "10.0.0.0/8/8", "10.0.0/8", "example.com/8", "10.0.0.0/ 8", "10.0.0.0/0x8"])
    func rejectsMalformedCIDRs(_ text: String) {
        #expect(CIDR(text) == nil)
    }
}
