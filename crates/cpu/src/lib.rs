//! placeholder until the CPU backends land
