//! Tests of the framing and of the client messages' decode, from byte
//! literals: whole, pipelined, truncated, hostile lengths and malformed bodies.

use super::*;

const MAX: usize = 1 << 20;

fn frame(bytes: &[u8]) -> Result<Option<Frame>, FrameError> {
    decode_frontend_frame(&mut BytesMut::from(bytes), MAX)
}

fn message(bytes: &[u8]) -> Result<FrontendMessage, FrameError> {
    FrontendMessage::decode(&frame(bytes)?.expect("a whole frame"))
}

#[test]
fn query() {
    assert_eq!(
        message(b"Q\x00\x00\x00\x0dSELECT 1\x00").unwrap(),
        FrontendMessage::Query(Bytes::from_static(b"SELECT 1"))
    );
}

#[test]
fn parse_bind_describe_execute_sync() {
    let parse = message(b"P\x00\x00\x00\x17s1\x00SELECT $1\x00\x00\x01\x00\x00\x00\x17").unwrap();
    assert_eq!(
        parse,
        FrontendMessage::Parse {
            name: Bytes::from_static(b"s1"),
            query: Bytes::from_static(b"SELECT $1"),
            param_types: vec![23],
        }
    );
    let bind = message(b"B\x00\x00\x00\x1c\x00s1\x00\x00\x01\x00\x01\x00\x02\x00\x00\x00\x04\x00\x00\x00\x2a\xff\xff\xff\xff\x00\x00").unwrap();
    let FrontendMessage::Bind(bind) = bind else {
        panic!("{bind:?}")
    };
    assert_eq!(bind.statement, Bytes::from_static(b"s1"));
    assert_eq!(
        bind.params,
        vec![Some(Bytes::from_static(b"\x00\x00\x00\x2a")), None]
    );
    assert_eq!(bind.param_format(1), 1);
    assert_eq!(
        message(b"D\x00\x00\x00\x08Ss1\x00").unwrap(),
        FrontendMessage::Describe {
            kind: Named::Statement,
            name: Bytes::from_static(b"s1")
        }
    );
    assert_eq!(
        message(b"E\x00\x00\x00\x09\x00\x00\x00\x00\x0a").unwrap(),
        FrontendMessage::Execute {
            portal: Bytes::new(),
            max_rows: 10
        }
    );
    assert_eq!(
        message(b"S\x00\x00\x00\x04").unwrap(),
        FrontendMessage::Sync
    );
}

#[test]
fn pipelined_messages_come_out_one_by_one() {
    let mut buf = BytesMut::from(&b"S\x00\x00\x00\x04H\x00\x00\x00\x04X\x00\x00"[..]);
    assert_eq!(
        decode_frontend_frame(&mut buf, MAX).unwrap().unwrap().kind,
        FrontendKind::Sync
    );
    assert_eq!(
        decode_frontend_frame(&mut buf, MAX).unwrap().unwrap().kind,
        FrontendKind::Flush
    );
    assert_eq!(decode_frontend_frame(&mut buf, MAX).unwrap(), None);
    buf.extend_from_slice(b"\x00\x04");
    assert_eq!(
        decode_frontend_frame(&mut buf, MAX).unwrap().unwrap().kind,
        FrontendKind::Terminate
    );
    assert!(buf.is_empty());
}

#[test]
fn hostile_lengths_are_refused_from_the_header() {
    // Sync claiming 10 MB, a Query over the configured maximum, a length
    // shorter than itself, and an unknown tag.
    assert!(matches!(
        frame(b"S\x00\x98\x96\x80"),
        Err(FrameError::BadLength { tag: b'S', .. })
    ));
    assert!(matches!(
        frame(b"Q\x7f\xff\xff\xff"),
        Err(FrameError::BadLength { tag: b'Q', .. })
    ));
    assert!(matches!(
        frame(b"Q\x00\x00\x00\x03"),
        Err(FrameError::BadLength { .. })
    ));
    assert_eq!(
        frame(b"Z\x00\x00\x00\x04"),
        Err(FrameError::UnknownTag(b'Z'))
    );
}

#[test]
fn malformed_bodies_are_errors_not_panics() {
    // Unterminated query, trailing bytes, Bind with a count larger than the
    // body, a negative parameter length, a bad Describe kind, truncation.
    for bytes in [
        &b"Q\x00\x00\x00\x08abcd"[..],
        b"Q\x00\x00\x00\x07a\x00b",
        b"B\x00\x00\x00\x08\x00\x00\x7f\xff",
        b"B\x00\x00\x00\x0e\x00\x00\x00\x00\x00\x01\xff\xff\xff\xfe",
        b"D\x00\x00\x00\x06X\x00",
        b"E\x00\x00\x00\x06\x00\x00",
        b"P\x00\x00\x00\x09\x00x\x00\x00\x02",
    ] {
        assert!(message(bytes).is_err(), "{bytes:?}");
    }
}

#[test]
fn counts_are_unsigned_16_bit_as_in_postgres() {
    // A Parse with 40,000 parameter types and a Bind with 65,535 NULL
    // parameters (the most Postgres accepts): counts above 32,767 are
    // not negative.
    let mut body = b"\0SELECT 1\0".to_vec();
    body.extend_from_slice(&40_000u16.to_be_bytes());
    body.extend(std::iter::repeat_n([0, 0, 0, 23], 40_000).flatten());
    let Ok(FrontendMessage::Parse { param_types, .. }) = message(&frame_bytes(b'P', &body)) else {
        panic!("Parse with 40,000 types refused");
    };
    assert_eq!(param_types.len(), 40_000);
    let mut body = b"\0\0\0\0".to_vec();
    body.extend_from_slice(&u16::MAX.to_be_bytes());
    body.extend(std::iter::repeat_n([0xff; 4], 65_535).flatten());
    body.extend_from_slice(&[0, 0]);
    let Ok(FrontendMessage::Bind(bind)) = message(&frame_bytes(b'B', &body)) else {
        panic!("Bind with 65,535 parameters refused");
    };
    assert_eq!(bind.params.len(), 65_535);
    assert!(bind.params.iter().all(Option::is_none));
    // A count the body cannot back is still refused.
    assert!(message(b"B\x00\x00\x00\x08\x00\x00\xff\xff").is_err());
}

fn frame_bytes(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    out.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// A Bind with `values` (format codes `formats`), encoded by the writer
/// the proxy uses to send Binds.
fn bind_body(formats: &[i16], values: &[Option<&[u8]>], results: &[i16]) -> Bytes {
    let bind = Bind {
        portal: Bytes::from_static(b"p"),
        statement: Bytes::new(),
        param_formats: formats.to_vec(),
        params: values
            .iter()
            .map(|v| v.map(Bytes::copy_from_slice))
            .collect(),
        result_formats: vec![],
    };
    let mut out = BytesMut::new();
    crate::protocol::messages::bind(&mut out, &bind, b"s7", results);
    frame(&out).unwrap().unwrap().body_bytes()
}

#[test]
fn a_bind_view_reads_what_was_written_and_owns_it_the_same() {
    let values: [Option<&[u8]>; 4] = [Some(b"42"), None, Some(b""), Some(b"\x00\x00\x00\x07")];
    for formats in [&[][..], &[1], &[0, 1, 0, 1]] {
        let body = bind_body(formats, &values, &[1, 0]);
        let view = BindView::parse(&body).unwrap();
        assert_eq!((view.portal, view.statement), (&b"p"[..], &b"s7"[..]));
        assert_eq!(view.param_count(), 4);
        let read: Vec<_> = view.values().collect();
        let format = |i: usize| match formats.len() {
            0 => 0,
            1 => formats[0],
            _ => formats[i],
        };
        let expected: Vec<_> = (0..4).map(|i| (format(i), values[i])).collect();
        assert_eq!(read, expected, "formats {formats:?}");
        let owned = view.to_bind();
        assert_eq!(owned.values().collect::<Vec<_>>(), expected);
        assert_eq!(owned.result_formats, [1, 0]);
        assert_eq!(
            FrontendMessage::Bind(owned),
            message(&frame_bytes(b'B', &body)).unwrap()
        );
    }
}

#[test]
fn a_bind_view_refuses_every_truncation_and_any_trailing_byte() {
    let body = bind_body(&[0, 1], &[Some(b"abc"), None], &[1]);
    BindView::parse(&body).unwrap();
    for cut in 0..body.len() {
        let short = body.slice(..cut);
        assert!(BindView::parse(&short).is_err(), "cut at {cut}");
    }
    let mut long = BytesMut::from(&body[..]);
    long.extend_from_slice(b"\0");
    let long = long.freeze();
    assert_eq!(
        BindView::parse(&long).unwrap_err(),
        FrameError::Malformed {
            tag: b'B',
            reason: "bytes after the last field"
        }
    );
}

#[test]
fn sasl_initial_responses_are_read_with_their_length_checked() {
    let good = b"SCRAM-SHA-256\0\0\0\0\x03abc";
    assert_eq!(
        sasl_initial_response(good),
        Some((&b"SCRAM-SHA-256"[..], &b"abc"[..]))
    );
    for bad in [
        &b"SCRAM-SHA-256"[..],
        b"SCRAM-SHA-256\0\0\0",
        b"SCRAM-SHA-256\0\0\0\0\x04abc",
        b"SCRAM-SHA-256\0\xff\xff\xff\xffabc",
    ] {
        assert_eq!(sasl_initial_response(bad), None, "{bad:?}");
    }
}

/// Regression (issue 35): a Bind with two format codes and three values
/// was read with the third value as text (no code of its own), and a
/// split or row move sent it on with an explicit text code, where
/// Postgres refuses the message.
#[test]
fn a_bind_with_format_codes_for_some_parameters_is_refused() {
    let values: [Option<&[u8]>; 3] = [
        Some(b"\x00\x00\x00\x01"),
        Some(b"\x00\x00\x00\x02"),
        Some(b"3"),
    ];
    for formats in [&[1, 1][..], &[0, 1, 0, 1]] {
        let body = bind_body(formats, &values, &[]);
        assert_eq!(
            BindView::parse(&body).unwrap_err(),
            FrameError::Malformed {
                tag: b'B',
                reason: "neither 0, 1 nor one parameter format per parameter"
            },
            "formats {formats:?}"
        );
        assert!(message(&frame_bytes(b'B', &body)).is_err());
    }
    for formats in [&[][..], &[1], &[1, 1, 0]] {
        BindView::parse(&bind_body(formats, &values, &[])).unwrap();
    }
}
