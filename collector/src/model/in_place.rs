//! Optional values kept in the value's own 8 bytes: one value the source can never give
//! stands for "none". An `Option<i64>` or `Option<u64>` takes 16 bytes, and the records a
//! large trace holds millions of ([`super::MemEvent`], the timeline's allocations) carry
//! several — each such field costs 8 bytes more an event than it needs.

/// Declare `$name`, an optional `$int` in 8 bytes where `$none` stands for none, read with
/// `get()` and made with `From<Option<$int>>` and `From<$int>` (which maps `$none` to none).
macro_rules! option_in_place {
    ($(#[$doc:meta])* $name:ident($int:ty), $(#[$none_doc:meta])* $none_name:ident = $none:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name($int);

        impl $name {
            $(#[$none_doc])*
            pub const $none_name: $name = $name($none);

            /// The value, unless it is the one that stands for none.
            pub fn get(self) -> Option<$int> {
                (self != $name::$none_name).then_some(self.0)
            }
        }

        impl From<Option<$int>> for $name {
            fn from(value: Option<$int>) -> $name {
                value.map_or($name::$none_name, $name)
            }
        }

        impl From<$int> for $name {
            fn from(value: $int) -> $name {
                $name(value)
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.get().fmt(f)
            }
        }
    };
}

pub(crate) use option_in_place;
