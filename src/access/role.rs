//! A member's role in a repository's access list (docs/design.md §6.4): its name in `_acl`
//! items and the API, its byte in snapshots.

/// A member's role. Each role has the rights of the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Reads the repository.
    Reader,
    /// Reads and changes items.
    Writer,
    /// Reads, changes items and changes the access list.
    Owner,
}

impl Role {
    /// The name used in `_acl` items and in the API.
    pub fn name(self) -> &'static str {
        match self {
            Role::Reader => "reader",
            Role::Writer => "writer",
            Role::Owner => "owner",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "reader" => Some(Role::Reader),
            "writer" => Some(Role::Writer),
            "owner" => Some(Role::Owner),
            _ => None,
        }
    }

    /// The byte used in snapshots (0 is "no role").
    pub(crate) fn code(role: Option<Role>) -> u8 {
        match role {
            None => 0,
            Some(Role::Reader) => 1,
            Some(Role::Writer) => 2,
            Some(Role::Owner) => 3,
        }
    }

    pub(crate) fn from_code(b: u8) -> Option<Option<Role>> {
        match b {
            0 => Some(None),
            1 => Some(Some(Role::Reader)),
            2 => Some(Some(Role::Writer)),
            3 => Some(Some(Role::Owner)),
            _ => None,
        }
    }
}
