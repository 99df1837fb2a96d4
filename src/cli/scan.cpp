#include "cli/scan.hpp"

#include <fmt/format.h>

#include "util/errors.hpp"

namespace redlock {

std::string Scan::label(const std::string& key) const {
    auto env = from_env.find(key);
    return env == from_env.end() ? "--" + key : env->second;
}

void scan_options(const std::vector<OptionSpec>& catalog, const std::vector<std::string>& args,
                  Scan& scan) {
    std::size_t i = scan.next;
    while (i < args.size()) {
        const std::string& a = args[i];
        if (a == "--") {
            scan.next = i + 1;
            scan.double_dash = true;
            return;
        }
        if (a.size() < 2 || a[0] != '-') break;
        if (a[1] == '-') {
            auto eq = a.find('=');
            std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
            const OptionSpec* opt = find_option(catalog, name, true);
            if (!opt) throw UsageError(fmt::format("unknown option '--{}' (see --help)", name));
            scan.given.insert(opt->key());
            if (!opt->takes_value && eq != std::string::npos)
                throw UsageError(fmt::format("option '--{}' takes no value", name));
            scan.options.push_back(a);
            if (opt->takes_value && eq == std::string::npos) {
                if (++i >= args.size())
                    throw UsageError(fmt::format("option '--{}' needs a value", name));
                scan.options.push_back(args[i]);
            }
            ++i;
            continue;
        }
        // A cluster of short options: "-qv", "-t5s", "-t 5s".
        for (std::size_t j = 1; j < a.size(); ++j) {
            std::string name(1, a[j]);
            const OptionSpec* opt = find_option(catalog, name, false);
            if (!opt) throw UsageError(fmt::format("unknown option '-{}' (see --help)", name));
            scan.given.insert(opt->key());
            scan.options.push_back("-" + name);
            if (!opt->takes_value) continue;
            if (j + 1 < a.size()) {
                scan.options.push_back(a.substr(j + 1));
            } else {
                if (i + 1 >= args.size())
                    throw UsageError(fmt::format("option '-{}' needs a value", name));
                scan.options.push_back(args[++i]);
            }
            break;
        }
        ++i;
    }
    scan.next = i;
}

std::vector<std::string> scan_operands(const std::vector<OptionSpec>& catalog,
                                       const std::vector<std::string>& args, Scan& scan) {
    std::vector<std::string> words;
    for (;;) {
        scan_options(catalog, args, scan);
        if (scan.double_dash) {
            words.insert(words.end(), args.begin() + static_cast<long>(scan.next), args.end());
            return words;
        }
        if (scan.next >= args.size()) return words;
        words.push_back(args[scan.next++]);
    }
}

}  // namespace redlock
