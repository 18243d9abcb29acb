//! A Bind read in place: the fields checked once and borrowed from the
//! frame's body, so routing a Bind allocates nothing and takes no reference
//! counts ([`super::Bind`], the owned form, is built from it where a Bind is
//! kept: a fan-out held until Sync, a row move; a split INSERT writes its
//! parts' Binds from the view).

use bytes::Bytes;

use super::{Bind, Frame, FrameError};

/// A Bind (`B`) body, checked whole as Postgres's `exec_bind_message` reads
/// it: portal, statement, parameter format codes, the values (length -1 is
/// NULL) and the result format codes, with nothing after them.
#[derive(Debug, Clone, Copy)]
pub struct BindView<'a> {
    body: &'a Bytes,
    pub portal: &'a [u8],
    pub statement: &'a [u8],
    /// Two bytes per code.
    param_formats: &'a [u8],
    param_count: usize,
    /// The values, each an `int32` length and its bytes.
    values: &'a [u8],
    /// Two bytes per code.
    result_formats: &'a [u8],
}

impl<'a> BindView<'a> {
    /// The Bind a Bind's frame holds.
    pub fn of(frame: &'a Frame) -> Result<BindView<'a>, FrameError> {
        BindView::parse_from(frame.bytes(), 5)
    }

    /// A Bind body.
    pub fn parse(body: &'a Bytes) -> Result<BindView<'a>, FrameError> {
        BindView::parse_from(body, 0)
    }

    /// The Bind body that starts at `start` of `bytes`.
    fn parse_from(bytes: &'a Bytes, start: usize) -> Result<BindView<'a>, FrameError> {
        let body = bytes;
        let mut r = Cursor {
            rest: bytes.get(start..).unwrap_or_default(),
        };
        let portal = r.cstr()?;
        let statement = r.cstr()?;
        let param_formats = r.format_codes()?;
        let param_count = r.count(4)?;
        // Postgres refuses any other count of codes ("bind message has %d
        // parameter formats but %d parameters", `exec_bind_message`):
        // values without a code of their own must not be read as text.
        if !matches!(param_formats.len() / 2, 0 | 1) && param_formats.len() / 2 != param_count {
            return Err(malformed(
                "neither 0, 1 nor one parameter format per parameter",
            ));
        }
        let values_start = r.rest;
        for _ in 0..param_count {
            match r.i32()? {
                -1 => {}
                len if len < 0 => return Err(malformed("negative parameter length")),
                len => {
                    r.take(len as usize, "value longer than the message")?;
                }
            }
        }
        let values = &values_start[..values_start.len() - r.rest.len()];
        let result_formats = r.format_codes()?;
        if !r.rest.is_empty() {
            return Err(malformed("bytes after the last field"));
        }
        Ok(BindView {
            body,
            portal,
            statement,
            param_formats,
            param_count,
            values,
            result_formats,
        })
    }

    pub fn param_count(&self) -> usize {
        self.param_count
    }

    /// How many parameter format codes it carries: none, one (for every
    /// value) or one per value.
    pub fn param_format_count(&self) -> usize {
        self.param_formats.len() / 2
    }

    /// The result format codes as sent (two bytes each).
    pub fn result_formats_raw(&self) -> &'a [u8] {
        self.result_formats
    }

    /// The format (0 text, 1 binary) of parameter `index`: none sent means
    /// all text, one applies to all.
    pub fn param_format(&self, index: usize) -> i16 {
        let code = |i: usize| {
            let at = 2 * i;
            self.param_formats
                .get(at..at + 2)
                .map_or(0, |b| i16::from_be_bytes([b[0], b[1]]))
        };
        match self.param_formats.len() / 2 {
            0 => 0,
            1 => code(0),
            _ => code(index),
        }
    }

    /// Each parameter's format and value (`None` is SQL NULL), in order.
    pub fn values(&self) -> impl Iterator<Item = (i16, Option<&'a [u8]>)> + '_ {
        let mut rest = self.values;
        (0..self.param_count).map(move |i| {
            let (len, tail) = rest.split_at_checked(4).unwrap_or((&[0; 4], &[]));
            let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
            let value = usize::try_from(len).ok().map(|n| {
                let (value, after) = tail.split_at_checked(n).unwrap_or((tail, &[]));
                rest = after;
                value
            });
            if value.is_none() {
                rest = tail;
            }
            (self.param_format(i), value)
        })
    }

    /// The owned form, its parts sharing the frame's buffer.
    pub fn to_bind(&self) -> Bind {
        let codes = |bytes: &[u8]| {
            bytes
                .chunks_exact(2)
                .map(|b| i16::from_be_bytes([b[0], b[1]]))
                .collect()
        };
        Bind {
            portal: self.body.slice_ref(self.portal),
            statement: self.body.slice_ref(self.statement),
            param_formats: codes(self.param_formats),
            params: self
                .values()
                .map(|(_, value)| value.map(|v| self.body.slice_ref(v)))
                .collect(),
            result_formats: codes(self.result_formats),
        }
    }
}

fn malformed(reason: &'static str) -> FrameError {
    FrameError::Malformed { tag: b'B', reason }
}

/// The unread part of the body; each read checks the length first.
struct Cursor<'a> {
    rest: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, short: &'static str) -> Result<&'a [u8], FrameError> {
        let (taken, rest) = self.rest.split_at_checked(n).ok_or(malformed(short))?;
        self.rest = rest;
        Ok(taken)
    }

    fn cstr(&mut self) -> Result<&'a [u8], FrameError> {
        let end = self.rest.iter().position(|&b| b == 0);
        let end = end.ok_or(malformed("missing NUL terminator"))?;
        let text = self.take(end, "missing NUL terminator")?;
        self.take(1, "missing NUL terminator")?;
        Ok(text)
    }

    fn i32(&mut self) -> Result<i32, FrameError> {
        let b = self.take(4, "message too short")?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A count (unsigned 16 bits, as Postgres reads it), refused when the
    /// rest could not hold that many items of `min_item` bytes.
    fn count(&mut self, min_item: usize) -> Result<usize, FrameError> {
        let b = self.take(2, "message too short")?;
        let n = usize::from(u16::from_be_bytes([b[0], b[1]]));
        if n * min_item > self.rest.len() {
            return Err(malformed("count larger than the message"));
        }
        Ok(n)
    }

    /// A count of format codes, then the codes.
    fn format_codes(&mut self) -> Result<&'a [u8], FrameError> {
        let n = self.count(2)?;
        self.take(2 * n, "message too short")
    }
}
