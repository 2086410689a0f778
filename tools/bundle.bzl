"""journalkv_bundle: a cc_library with everything it depends on, as files to install outside
Bazel (//:install): one static archive, one shared library, the headers under
include/journalkv/ as the sources include them, and a pkg-config file template."""

def _bundle_impl(ctx):
    info = ctx.attr.lib[CcInfo]
    archives = []
    flags = []
    for linker_input in info.linking_context.linker_inputs.to_list():
        for flag in linker_input.user_link_flags:
            if flag not in flags:
                flags.append(flag)
        for library in linker_input.libraries:
            archive = library.pic_static_library or library.static_library
            if archive != None and archive not in archives:
                archives.append(archive)

    name = ctx.attr.library_name
    sanitizer = " ".join(ctx.attr.sanitizer_flags)
    static = ctx.actions.declare_file("lib%s.a" % name)
    shared = ctx.actions.declare_file("lib%s.so" % name)

    # One archive of every member of every archive (position-independent objects, so the
    # shared library is made of the same ones).
    script = "create %s\n" % static.path
    for archive in archives:
        script += "addlib %s\n" % archive.path
    script += "save\nend\n"
    ctx.actions.run_shell(
        inputs = archives,
        outputs = [static],
        command = "printf '%%s' '%s' | ar -M && ranlib %s" % (script, static.path),
        mnemonic = "BundleArchive",
        progress_message = "Bundling %s" % static.short_path,
        use_default_shell_env = True,
    )
    ctx.actions.run_shell(
        inputs = [static],
        outputs = [shared],
        command = "g++ -shared -o %s -Wl,-soname,lib%s.so -Wl,--whole-archive %s " % (
            shared.path,
            name,
            static.path,
        ) + "-Wl,--no-whole-archive -Wl,--no-undefined %s %s" % (sanitizer, " ".join(flags)),
        mnemonic = "BundleShared",
        progress_message = "Linking %s" % shared.short_path,
        use_default_shell_env = True,
    )

    headers = [h for h in info.compilation_context.headers.to_list() if not h.short_path.startswith("../")]
    copies = []
    commands = []
    for header in headers:
        copy = ctx.actions.declare_file("include/%s/%s" % (name, header.short_path))
        copies.append(copy)
        commands.append("cp %s %s" % (header.path, copy.path))
    ctx.actions.run_shell(
        inputs = headers,
        outputs = copies,
        command = " && ".join(commands),
        mnemonic = "BundleHeaders",
        progress_message = "Copying the headers of %s" % name,
    )

    pc = ctx.actions.declare_file("%s.pc.in" % name)
    ctx.actions.write(pc, "\n".join([
        "prefix=@PREFIX@",
        "libdir=${prefix}/lib",
        "includedir=${prefix}/include/%s" % name,
        "# What the library links against (system libraries): for linking lib%s.a by name." % name,
        "deplibs=%s" % " ".join(ctx.attr.sanitizer_flags + flags),
        "",
        "Name: %s" % name,
        "Description: %s" % ctx.attr.description,
        "Version: %s" % ctx.attr.version,
        "Cflags: %s" % " ".join(["-std=c++20"] + ctx.attr.sanitizer_flags + ["-I${includedir}"]),
        "Libs: -L${libdir} -l%s ${deplibs}" % name,
        "",
    ]))
    outputs = [static, shared, pc] + copies
    return [DefaultInfo(files = depset(outputs), runfiles = ctx.runfiles(files = outputs))]

journalkv_bundle = rule(
    implementation = _bundle_impl,
    attrs = {
        "lib": attr.label(providers = [CcInfo], mandatory = True),
        "library_name": attr.string(mandatory = True),
        "version": attr.string(mandatory = True),
        "sanitizer_flags": attr.string_list(),
        "description": attr.string(mandatory = True),
    },
)
