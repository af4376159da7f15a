#pragma once
// Each subcommand registers its options and its callback on the top-level app.

#include <CLI/CLI.hpp>

namespace alto::cli {

void add_info_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_features_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_embed_command(CLI::App& app);
void add_transcribe_command(CLI::App& app);
void add_encode_command(CLI::App& app);
void add_decode_command(CLI::App& app);

}  // namespace alto::cli
