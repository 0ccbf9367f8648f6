import DownloadCore
import Testing

/// What the XML reader gives of a document, and what it refuses.
@Suite struct XMLReaderTests {
    private func events(_ text: String) -> [XMLReader.Event]? {
        try? XMLReader.events(Array(text.utf8))
    }

    private func failure(_ text: String) -> XMLReader.Failure? {
        do {
            _ = try XMLReader.events(Array(text.utf8))
            return nil
        } catch {
            return error
        }
    }

    @Test func anAnswerReadsAsItsElementsAndText() {
        let answer = """
            <?xml version="1.0" encoding="UTF-8"?>
            <Error><Code>NoSuchKey</Code><Message>The key &quot;a&amp;b&quot; &#x263A;&#9731;</Message></Error>
            """
        #expect(events(answer) == [
            .start("Error"), .start("Code"), .text("NoSuchKey"), .end("Code"),
            .start("Message"), .text("The key \"a&b\" ☺☃"), .end("Message"), .end("Error"),
        ])
    }

    @Test func textAcrossCommentsReferencesAndCDATAIsOneEvent() {
        let document = "<a>x<!-- note -->&lt;<![CDATA[<b>&amp;]]><?keep going?>y</a>"
        #expect(events(document) == [.start("a"), .text("x<<b>&amp;y"), .end("a")])
    }

    @Test func lineEndsReadAsLineFeedsExceptByReference() {
        #expect(events("<a>1\r\n2\r3&#13;</a>") == [.start("a"), .text("1\n2\n3\r"), .end("a")])
    }

    @Test func anEmptyElementStartsAndEnds() {
        #expect(events("<a><b/><c x='1' y=\"2\" /></a>") == [.start("a"), .start("b"), .end("b"), .start("c"), .end("c"), .end("a")])
    }

    @Test func declaredPrefixesAreKeptInNames() {
        let document = #"<s3:R xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/" xmlns="urn:x"><s3:K xml:lang="en">v</s3:K></s3:R>"#
        #expect(events(document) == [.start("s3:R"), .start("s3:K"), .text("v"), .end("s3:K"), .end("s3:R")])
    }

    @Test func aByteOrderMarkAndMiscellanyAroundTheRootAreAllowed() {
        #expect(events("\u{FEFF}<?xml version='1.0' standalone='yes' ?>\n<!-- c --><?pi?><a/>\n<!-- d -->\n") == [.start("a"), .end("a")])
    }

    @Test(arguments: [
        ("", "expected the root element"),
        ("<a>", "unexpected end of the document in <a>"),
        ("<a></b>", "</b> does not close the open element"),
        ("<a/><b/>", "unexpected text after the root element"),
        ("text", "expected the root element"),
        ("<a>]]></a>", "']]>' outside a CDATA section"),
        ("<a>&nbsp;</a>", "a reference to an undeclared entity"),
        ("<a>&#0;</a>", "a reference to a character XML does not allow"),
        ("<a>&#xFFFFFFFFFF;</a>", "a reference to a character XML does not allow"),
        ("<a>&#;</a>", "a malformed character reference"),
        ("<a>\u{1}</a>", "a character XML does not allow"),
        ("<a b='1' b='2'/>", "attribute b given twice"),
        ("<a b='1'c='2'/>", "expected an attribute or the end of <a>"),
        ("<a b='<'/>", "'<' in an attribute value"),
        ("<a><!-- x -- y --></a>", "'--' within a comment"),
        ("<a><?xml version='1.0'?></a>", "expected the name of a processing instruction"),
        ("<!DOCTYPE a [<!ENTITY e 'x'>]><a>&e;</a>", "a document type declaration"),
        ("<?xml version='1.0' encoding='ISO-8859-1'?><a/>", "an encoding other than UTF-8"),
        ("<?xml version='1.1'?><a/>", "an XML version other than 1.0"),
        ("<?xml encoding='UTF-8'?><a/>", "expected version in the XML declaration"),
        ("<p:a/>", "undeclared namespace prefix in p:a"),
        ("<a p:b='1'/>", "undeclared namespace prefix in p:b"),
        ("<a:b:c xmlns:a='urn:a'/>", "a:b:c is not a qualified name"),
        ("<a xmlns:p=''/>", "a namespace declaration XML does not allow: xmlns:p"),
        ("<a xmlns:p='urn:x' xmlns:q='urn:x' p:b='1' q:b='2'/>", "attribute q:b given twice in one namespace"),
    ])
    func aMalformedDocumentIsRefusedSayingWhy(document: String, message: String) {
        #expect(failure(document)?.message == message, "\(document)")
    }

    @Test func namesAreComparedAndSplitByCodePointsNotCharacters() {
        // A combining mark after the colon: one Character with it, but the local name starts with it.
        #expect(failure("<a xml:\u{300}b='1'/>")?.message == "xml:\u{300}b is not a qualified name")
        // Canonically equivalent, but not the same name.
        #expect(failure("<\u{E9}></e\u{301}>")?.message == "</e\u{301}> does not close the open element")
        #expect(events("<a e\u{301}='1' \u{E9}='2'/>") == [.start("a"), .end("a")])
    }

    @Test func aPrefixIsInScopeOnlyWithinItsElement() {
        #expect(events("<a><b xmlns:p='urn:p'><p:c/></b></a>") != nil)
        #expect(failure("<a><b xmlns:p='urn:p'/><p:c/></a>")?.message == "undeclared namespace prefix in p:c")
    }

    @Test func nestingIsBounded() {
        let deepest = String(repeating: "<a>", count: XMLReader.maxDepth) + String(repeating: "</a>", count: XMLReader.maxDepth)
        #expect(events(deepest)?.count == 2 * XMLReader.maxDepth)
        #expect(failure("<a>" + deepest + "</a>")?.message == "elements nested deeper than \(XMLReader.maxDepth)")
    }

    @Test func bytesThatAreNotUTF8AreRefused() {
        let failure = #expect(throws: XMLReader.Failure.self) { try XMLReader.events([0x3C, 0x61, 0xFF, 0x2F, 0x3E]) }
        #expect(failure?.message == "the document is not UTF-8")
    }
}
