"""The names vulture (60 % confidence) reports as unused that a framework calls or reads by name:
its whitelist for tests/test_dead_code.py. Each line names the framework that uses the name; a
name that is here without such a caller is dead code and goes, not here. (Vulture reads this
file; nothing imports it.)"""
# flake8: noqa
_ = object()

# Lark's Transformer calls a method of syntax/build.py's Builder per grammar rule, by the rule's
# name (Lark's own road; reduce.py's callbacks call the same methods)
_.expr_only, _.import_stmt, _.module_path, _.import_names, _.import_alias, _.param_stmt
_.type_ann, _.renamed_param, _.let_stmt, _.check_stmt, _.check_else, _.fail_stmt, _.set_stmt
_.allow_stmt, _.if_expr, _.or_op, _.and_op, _.not_op, _.compare_op, _.replicate, _.convert
_.range_op, _.range_open, _.pow_op, _.wildcard, _.pos_arg, _.kw_arg, _.quantity, _.string
_.false, _.paren, _.comprehension

# pygls calls the language server's features (lsp/server.py `@server.feature`) on the client's
# messages; its JsonRpcException reads CODE and MESSAGE of a subclass; its dispatcher reads
# `jsonrpc` of a message (lsp/protocol.py `_Dropped`)
_.too_large, _.did_open, _.did_change, _.did_save, _.did_close, _.completion, _.formatting
_.files_changed
# pygls reports a notification it could not handle through the server's report_server_error
_.report_server_error
# pygls's protocol dispatches a message to its `@lsp_method` by the method's name (lsp/protocol.py
# overrides textDocument/didChange's)
_.lsp_text_document__did_change
_.CODE, _.MESSAGE, _.jsonrpc
# the tests' and the benchmark's language clients: pygls calls their handlers
_.on_diagnostics
# tests/test_lsp_publish.py gives an in-process server pygls's workspace (its `workspace`
# property reads the protocol's `_workspace`)
_._workspace

# Python calls a module's __getattr__ for a name it lacks (PEP 562: the lazy API of
# astral_dsl/__init__.py, api/__init__.py and seer/__init__.py), and its __dir__ for dir() of it
# (PEP 562: astral_dsl/__init__.py lists the lazy API's names)
_.__getattr__, _.__dir__

# Python reads a function's __defaults__ when it is called with fewer arguments (syntax/ast.py:
# the defaults of a node's __init__)
_.__defaults__

# pickle's Unpickler calls find_class for every global it loads (explore/unpickle.py); Dask's
# modules take `pickle.Unpickler` from the facade that module installs
_.find_class, _.Unpickler

# Attributes set to let the garbage collector and logging drop what they would hold:
# cli/__init__.py drops a MemoryError's frames (`__traceback__`); explore/engines.py clears a
# log record's exc_text and stack_info, which logging's Formatter reads
_.__traceback__, _.exc_text, _.stack_info
# syntax/reduce.py gives Lark's Rule objects a subclass with slots (`rule.__class__ = _Rule`)
_.__class__
# Python's import system reads sys.dont_write_bytecode (tests/conftest.py sets it)
_.dont_write_bytecode

# analyses/facility.py: the facility's draw is summed and reported component by component
# through COMPONENTS, a table of field names read with getattr (total_w, outputs/size_facility)
_.facility_pumps_w, _.auxiliary_w

# pytest fixtures requested by name (test parameters used for their effect)
_.deadline, _._fresh_cache, _.own_heap

# html.parser.HTMLParser calls these on a subclass (tests/test_report_browser.py)
_.handle_starttag, _.handle_endtag, _.handle_data

# pytest calls a conftest.py's hooks by name (tests/conftest.py)
_.pytest_collection_finish, _.pytest_sessionfinish, _.pytest_runtest_setup
