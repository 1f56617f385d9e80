//! `offload-rs-jit`: the JIT's compile helper process (see `offload_rs::jit::helper`). The library starts
//! it with posix_spawn and sends it the images to compile; it is not meant to be run by hand.

fn main() {
    offload_rs::jit::helper::helper_main()
}
