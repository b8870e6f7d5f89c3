"""The variants funcsac ships, one folder each: its algorithm (losses, options, order of the
steps), its networks, the presets that use them and the references they follow. Importing this
package imports every folder in it, and each registers itself (``funcsac.registry``), as a
variant defined outside funcsac does: adding or deleting a variant is adding or deleting its
folder."""
import importlib
import pkgutil

__all__ = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg)
for _name in __all__:
    importlib.import_module(f"{__name__}.{_name}")
