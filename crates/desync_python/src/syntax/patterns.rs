//! Spellings of torch.distributed calls and dtypes, for the outline of a file's calls and for
//! describing what a collective carries. Whether a value can differ across ranks is decided by
//! data flow (`flow`) and the knowledge table, never by these lists.

/// `torch.distributed` collectives and point-to-point calls (last segment of the callee).
pub const COLLECTIVES: &[&str] = &[
    "all_reduce",
    "all_reduce_coalesced",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_gather_coalesced",
    "_all_gather_base",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "_reduce_scatter_base",
    "broadcast",
    "broadcast_object_list",
    "all_to_all",
    "all_to_all_single",
    "barrier",
    "monitored_barrier",
    "gather",
    "gather_object",
    "scatter",
    "scatter_object_list",
    "send",
    "recv",
    "isend",
    "irecv",
    "batch_isend_irecv",
    "send_object_list",
    "recv_object_list",
];

/// Calls that issue collectives indirectly (DDP/FSDP gradient hooks, FSDP norm clipping).
pub const IMPLICIT_COLLECTIVES: &[&str] =
    &["backward", "clip_grad_norm_", "full_tensor", "redistribute"];

/// `torch.<name>` dtypes.
pub const TORCH_DTYPES: &[&str] = &[
    "float",
    "float16",
    "float32",
    "float64",
    "bfloat16",
    "half",
    "double",
    "int",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "long",
    "short",
    "bool",
    "complex64",
    "complex128",
    "float8_e4m3fn",
    "float8_e5m2",
];

/// Snake-case words of a name, lowercased (`valLoss` stays one word).
pub fn words(name: &str) -> impl Iterator<Item = String> + '_ {
    name.split('_').filter(|w| !w.is_empty()).map(str::to_ascii_lowercase)
}

/// True when one of `name`'s words is in `list`.
pub fn has_word(name: &str, list: &[&str]) -> bool {
    words(name).any(|w| list.contains(&w.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_snake_case() {
        assert!(has_word("comm_dtype", &["dtype"]));
        assert!(has_word("padded_len", &["padded"]));
        assert!(!has_word("dtypes_seen", &["dtype"]));
        assert_eq!(words("Val_Loss").collect::<Vec<_>>(), ["val", "loss"]);
    }
}
