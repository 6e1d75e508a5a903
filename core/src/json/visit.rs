//! Walking a value whose shape is read rarely (an AppArmor field, an
//! audited object's owners): each level a `dyn` closure, so one copy of the
//! loop serves every level, where the request's hot path inlines its own.
//! A value of another type than the one asked for is skipped: it has no
//! members, no elements, no string.

use std::borrow::Cow;

use super::{Reader, Result};

/// Calls `read` for each member of the object that starts here.
pub fn members<'a>(
    r: &mut Reader<'a>,
    read: &mut dyn FnMut(&mut Reader<'a>, &str) -> Result<()>,
) -> Result<()> {
    if r.peek() != Some(b'{') {
        return r.skip_value();
    }
    let mut members = r.members();
    while let Some(key) = members.next(r)? {
        read(r, &key.text())?;
    }
    Ok(())
}

/// Calls `read` for each element of the array that starts here.
pub fn elements<'a>(
    r: &mut Reader<'a>,
    read: &mut dyn FnMut(&mut Reader<'a>) -> Result<()>,
) -> Result<()> {
    match r.peek() {
        Some(b'[') => r.array(|r| read(r)),
        _ => r.skip_value(),
    }
}

/// The string that starts here, `None` for another value.
pub fn string<'a>(r: &mut Reader<'a>) -> Result<Option<Cow<'a, str>>> {
    match r.peek() {
        Some(b'"') => r.string().map(Some),
        _ => r.skip_value().map(|()| None),
    }
}
