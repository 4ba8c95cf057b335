fn main() { println!("xtask: being written"); }
