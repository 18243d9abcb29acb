//! Property tests of the codec (issue 35): streams of client messages,
//! first packets (StartupMessage, SSLRequest, GSSENCRequest,
//! CancelRequest) and server messages, valid and mutated, cut into random
//! reads. Never a panic; a stream decodes into messages or an error; a
//! hostile length reserves memory only as its bytes come; valid messages
//! read back as written.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;

use super::backend::{BackendFrame, BackendMessage};
use super::frame::{frontend_limit, split_frontend_message};
use super::frontend::{decode_frontend_frame, BindView, Frame, FrontendMessage, Named};
use super::fuzz::{chunks, config, cut, mutated};
use super::startup::{decode_startup, encode_cancel, Startup, StartupMessage};
use super::{copy_shape::CopyShape, messages, ready, rows};

/// The most a buffer may hold for bytes not yet come (the codec's
/// `RESERVE_AHEAD`, 256 KiB, and what `BytesMut` rounds it to).
const MOST_RESERVED: usize = 1 << 20;

fn name() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(1..=255u8, 0..6)
}

fn sql() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("SELECT $1".to_owned()),
        Just("INSERT INTO orders (tenant_id) VALUES ($1)".to_owned()),
        "[ -~]{0,24}",
    ]
}

fn named() -> impl Strategy<Value = Named> {
    prop_oneof![Just(Named::Statement), Just(Named::Portal)]
}

/// One valid client message, whole.
fn frontend_message() -> impl Strategy<Value = Vec<u8>> {
    let value = prop::option::of(prop::collection::vec(any::<u8>(), 0..10));
    let values = prop::collection::vec(value, 0..5);
    let formats = prop::collection::vec(0..2i16, 0..2);
    prop_oneof![
        sql().prop_map(|sql| encoded(|out| messages::query(out, &sql))),
        (name(), sql(), prop::collection::vec(any::<u32>(), 0..4)).prop_map(|(n, sql, types)| {
            encoded(|out| messages::parse(out, &n, sql.as_bytes(), &types))
        }),
        (name(), name(), formats, values).prop_map(|(portal, statement, formats, values)| {
            // None, one, or one format code per value.
            let formats = match formats.len() {
                0 | 1 => formats,
                _ => values.iter().map(|v| i16::from(v.is_some())).collect(),
            };
            let values: Vec<Option<&[u8]>> = values.iter().map(|v| v.as_deref()).collect();
            encoded(|out| {
                messages::bind_values(out, (&portal, &statement), &formats, &values, &[1])
            })
        }),
        (named(), name()).prop_map(|(k, n)| encoded(|out| messages::describe(out, k, &n))),
        (named(), name()).prop_map(|(k, n)| encoded(|out| messages::close(out, k, &n))),
        (name(), any::<i32>())
            .prop_map(|(p, rows)| encoded(|out| messages::execute_rows(out, &p, rows))),
        Just(encoded(messages::sync)),
        Just(encoded(messages::flush)),
        Just(encoded(messages::terminate)),
        Just(encoded(messages::copy_done)),
        prop::collection::vec(any::<u8>(), 0..16)
            .prop_map(|d| encoded(|out| messages::copy_data(out, &d))),
        "[ -~]{0,12}".prop_map(|r| encoded(|out| messages::copy_fail(out, &r))),
        prop::collection::vec(any::<u8>(), 0..12)
            .prop_map(|p| encoded(|out| messages::password(out, &p))),
        prop::collection::vec(any::<u8>(), 0..12).prop_map(|d| encoded(|out| {
            messages::sasl_initial_response(out, "SCRAM-SHA-256", &d)
        })),
        Just(b"F\x00\x00\x00\x0e\x00\x00\x04\xd2\x00\x00\x00\x00\x00\x00".to_vec()),
    ]
}

fn encoded(write: impl FnOnce(&mut BytesMut)) -> Vec<u8> {
    let mut out = BytesMut::new();
    write(&mut out);
    out.to_vec()
}

fn frontend_stream() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(frontend_message(), 1..6).prop_map(|m| m.concat())
}

/// What the session does with a client message: decode it, read a Bind in
/// place, find and rename its statement, read it as SASL.
fn use_frame(frame: &Frame) -> Result<(), TestCaseError> {
    let decoded = FrontendMessage::decode(frame);
    if let Ok(FrontendMessage::Bind(bind)) = &decoded {
        let view = BindView::of(frame);
        prop_assert!(
            view.is_ok(),
            "decode read a Bind the view refuses: {view:?}"
        );
        if let Ok(view) = view {
            prop_assert_eq!(view.to_bind(), bind.clone());
            prop_assert!(view.values().eq(bind.values()));
        }
    }
    if let Ok(Some(name)) = frame.statement_name() {
        let mut out = BytesMut::new();
        frame.write_renamed(name, b"renamed", &mut out);
    }
    let _ = super::frontend::sasl_initial_response(frame.body());
    Ok(())
}

/// Frames of `bytes` fed in reads of `sizes`, each used as the session
/// would, until the stream ends or errs (which closes the connection).
fn decode_frontend(bytes: &[u8], sizes: &[usize], max: usize) -> Result<Vec<Frame>, TestCaseError> {
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    for piece in cut(bytes, sizes) {
        buf.extend_from_slice(piece);
        loop {
            match decode_frontend_frame(&mut buf, max) {
                Ok(Some(frame)) => {
                    let limit = frontend_limit(frame.kind.tag(), max).unwrap_or(0);
                    prop_assert!(frame.bytes().len() <= limit + 5, "{frame:?} over {limit}");
                    use_frame(&frame)?;
                    frames.push(frame);
                }
                Ok(None) => {
                    prop_assert!(
                        buf.capacity() <= MOST_RESERVED,
                        "{} reserved",
                        buf.capacity()
                    );
                    break;
                }
                Err(_) => return Ok(frames),
            }
        }
    }
    Ok(frames)
}

/// A valid first packet of each kind.
fn first_packet() -> impl Strategy<Value = Vec<u8>> {
    let param = ("[a-z_]{1,8}", "[ -~]{0,8}");
    prop_oneof![
        Just(b"\x00\x00\x00\x08\x04\xd2\x16\x2f".to_vec()),
        Just(b"\x00\x00\x00\x08\x04\xd2\x16\x30".to_vec()),
        (any::<u32>(), prop::collection::vec(any::<u8>(), 4..=32))
            .prop_map(|(pid, key)| encoded(|out| encode_cancel(pid, &key, out))),
        (0..3u16, prop::collection::vec(param, 0..4)).prop_map(|(minor, mut params)| {
            params.insert(0, ("user".to_owned(), "app".to_owned()));
            let startup = Startup {
                major: 3,
                minor,
                params,
            };
            encoded(|out| startup.encode(out))
        }),
    ]
}

/// One valid server message, whole.
fn backend_message() -> impl Strategy<Value = Vec<u8>> {
    let body = |tag: u8, body: Vec<u8>| {
        let mut out = vec![tag];
        out.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        out.extend_from_slice(&body);
        out
    };
    let bytes = || prop::collection::vec(any::<u8>(), 0..24);
    prop_oneof![
        (0..13u32, bytes()).prop_map(move |(code, rest)| {
            let mut b = code.to_be_bytes().to_vec();
            b.extend(rest);
            body(b'R', b)
        }),
        Just(body(b'Z', b"I".to_vec())),
        Just(body(b'Z', b"T".to_vec())),
        Just(body(b'K', b"\x00\x00\x30\x39\xde\xad\xbe\xef".to_vec())),
        Just(body(b'S', b"client_encoding\x00UTF8\x00".to_vec())),
        "[A-Z]{1,6}( 0)?( [0-9]{1,3})?"
            .prop_map(move |t| body(b'C', [t.as_bytes(), b"\0"].concat())),
        Just(body(
            b'E',
            b"SERROR\x00C42P01\x00Mno such table\x00\x00".to_vec()
        )),
        Just(body(b'N', b"SNOTICE\x00Mhi\x00\x00".to_vec())),
        prop::collection::vec(
            prop::option::of(prop::collection::vec(any::<u8>(), 0..6)),
            0..4
        )
        .prop_map(move |values| {
            let values: Vec<Option<&[u8]>> = values.iter().map(|v| v.as_deref()).collect();
            encoded(|out| rows::write_row(out, &values))
        }),
        prop::collection::vec("[a-z]{1,6}", 0..4).prop_map(|names| {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            encoded(|out| messages::row_description(out, &names))
        }),
        (any::<bool>(), 0..4usize)
            .prop_map(|(b, n)| encoded(|out| messages::copy_out_response(out, b, n))),
        bytes().prop_map(move |d| body(b'd', d)),
        prop::sample::select(vec![b'1', b'2', b'3', b'c', b'n', b's', b'I'])
            .prop_map(move |tag| body(tag, Vec::new())),
        bytes().prop_map(move |d| body(b'A', d)),
        bytes().prop_map(move |d| body(b't', d)),
        bytes().prop_map(move |d| body(b'v', d)),
    ]
}

/// What the proxy reads of a server message: its view and the parts the
/// session and the merge read.
fn use_backend(frame: &BackendFrame) {
    let bytes = frame.bytes();
    match frame.message() {
        BackendMessage::ErrorResponse(fields) | BackendMessage::NoticeResponse(fields) => {
            let _ = (fields.code(), fields.message(), fields.text(b'D'));
        }
        BackendMessage::CommandComplete(tag) => {
            let _ = (tag.split_count(), tag.changes_schema(), tag.is_commit());
        }
        BackendMessage::DataRow(_) => {
            if let Some(row) = rows::parse_row(bytes) {
                for column in 0..row.values.len() + 1 {
                    let _ = row.value(column);
                }
            }
        }
        BackendMessage::RowDescription(body) => {
            let _ = (rows::read_fields(body), rows::column_names(body));
        }
        BackendMessage::CopyInResponse(body) | BackendMessage::CopyOutResponse(body) => {
            let _ = CopyShape::read(body);
        }
        _ => {}
    }
    let _ = frame.kind();
}

proptest! {
    #![proptest_config(config(512))]

    /// Valid client streams come out message by message, whatever the reads.
    #[test]
    fn client_streams_read_back(messages in prop::collection::vec(frontend_message(), 1..6), sizes in chunks()) {
        let stream = messages.concat();
        let frames = decode_frontend(&stream, &sizes, 1 << 20)?;
        prop_assert_eq!(frames.len(), messages.len());
        for (frame, message) in frames.iter().zip(&messages) {
            prop_assert_eq!(&frame.bytes()[..], &message[..]);
            prop_assert!(FrontendMessage::decode(frame).is_ok(), "{:?}", frame);
        }
    }

    /// Mutated client streams (hostile lengths included), with a small and
    /// a large message cap: frames or an error, never a panic.
    #[test]
    fn mutated_client_streams_never_panic(
        stream in mutated(frontend_stream(), 6),
        sizes in chunks(),
        max in prop::sample::select(vec![16usize, 1 << 20]),
    ) {
        decode_frontend(&stream, &sizes, max)?;
    }

    /// Any first packet, valid or mutated, read at once or byte by byte:
    /// the same message or error, or more bytes wanted only under the cap.
    #[test]
    fn first_packets_never_panic(packet in mutated(first_packet(), 4), sizes in chunks()) {
        let whole = decode_startup(&mut BytesMut::from(&packet[..]));
        let mut buf = BytesMut::new();
        let mut piecewise = Ok(None);
        for piece in cut(&packet, &sizes) {
            buf.extend_from_slice(piece);
            piecewise = decode_startup(&mut buf);
            if !matches!(piecewise, Ok(None)) {
                break;
            }
        }
        prop_assert_eq!(&whole, &piecewise);
        if let Ok(None) = whole {
            prop_assert!(packet.len() < super::startup::MAX_STARTUP_PACKET_LENGTH);
        }
        if let Ok(Some(StartupMessage::Startup(startup))) = whole {
            let mut again = BytesMut::new();
            startup.encode(&mut again);
            prop_assert_eq!(decode_startup(&mut again), Ok(Some(StartupMessage::Startup(startup))));
        }
    }

    /// Server streams, valid and mutated, cut into reads: frames whose
    /// views and fields read without a panic, or an error.
    #[test]
    fn server_streams_never_panic(
        stream in mutated(prop::collection::vec(backend_message(), 1..6).prop_map(|m| m.concat()), 6),
        sizes in chunks(),
    ) {
        let mut buf = BytesMut::new();
        'reads: for piece in cut(&stream, &sizes) {
            buf.extend_from_slice(piece);
            loop {
                match BackendFrame::split(&mut buf) {
                    Ok(Some(frame)) => {
                        use_backend(&frame);
                        prop_assert_eq!(BackendMessage::parse(frame.bytes()).map(|m| m.kind()), Ok(frame.kind()));
                    }
                    Ok(None) => {
                        prop_assert!(buf.capacity() <= MOST_RESERVED, "{} reserved", buf.capacity());
                        break;
                    }
                    Err(_) => break 'reads,
                }
            }
        }
        let mut out = BytesMut::from(&stream[..]);
        let end = ready::drop_ready_for_query(&mut out, 0);
        prop_assert!(end <= out.len());
    }

    /// Bind bodies of any bytes: the view and the decode agree.
    #[test]
    fn bind_bodies_agree(body in mutated(frontend_message().prop_map(|m| m[5.min(m.len())..].to_vec()), 6)) {
        let frame = Frame::new(super::frontend::FrontendKind::Bind, &body);
        let view = BindView::parse(&Bytes::from(body.clone())).map(|v| v.to_bind());
        match FrontendMessage::decode(&frame) {
            Ok(FrontendMessage::Bind(bind)) => prop_assert_eq!(view, Ok(bind)),
            other => prop_assert!(view.is_err(), "{other:?} vs {view:?}"),
        }
        let _ = split_frontend_message(&mut BytesMut::from(&body[..]), 1 << 20);
    }
}
