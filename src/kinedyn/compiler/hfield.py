"""Height fields: ``<asset><hfield>`` read and compiled as MuJoCo 4.0's mjCHField::Compile does.

A height field is a grid of ``nrow x ncol`` elevations over the rectangle ``[-size[0], size[0]] x
[-size[1], size[1]]`` of its geom's frame; elevation ``e`` in [0, 1] stands at height
``e * size[2]``, and the solid reaches down to ``-size[3]``. The elevations come from

* ``elevation`` (with ``nrow`` and ``ncol``), listed from the top row of the image down: the
  rows are stored reversed, so that row 0 is at ``y = -size[1]``;
* ``nrow``/``ncol`` alone: all zero (a terrain filled in at run time);
* ``file``: a PNG (grey, the red channel of colour images, the high byte of 16-bit samples, as
  lodepng's conversion to 8-bit grey gives; rows reversed as above) read with Pillow, or
  MuJoCo's binary format (int32 nrow, int32 ncol, then nrow*ncol float32, rows as stored).
  The format is ``content_type`` (``image/png``, ``image/vnd.mujoco.hfield``) or the extension:
  ``.png`` is a PNG, mesh and texture extensions are refused, anything else is the binary format.
  The file is looked up in ``<compiler meshdir>`` (or ``assetdir``), as MuJoCo does.

The elevations are then shifted and scaled to [0, 1] in float32 arithmetic (a flat field
becomes all zero) and kept as float32 values in ``hfield_data``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kinedyn.xml.mjcf import Node, asset_path, typed_attrs

PNG = "image/png"
MAX_ELEVATIONS = 1 << 27  # a larger grid is refused rather than exhausting memory
CUSTOM = "image/vnd.mujoco.hfield"
# content types MuJoCo recognises but refuses for height fields (GetAssetContentType's table)
_OTHER_TYPES = {"stl": "model/stl", "obj": "model/obj", "msh": "model/vnd.mujoco.msh", "ktx": "image/ktx"}


@dataclass
class HFieldAsset:
    node: Node
    attrs: dict
    name: str
    id: int
    nrow: int = 0
    ncol: int = 0
    size: list = field(default_factory=list)
    data: np.ndarray | None = None  # (nrow * ncol,) float32 in [0, 1], row 0 first

    def error(self, message: str, attribute: str | None = None):
        return self.node.error(message, attribute)


def read_hfields(sections: dict, meshdir: str, strippath: bool, model_dir: Path | None) -> list[HFieldAsset]:
    """Every ``<asset><hfield>`` in document order, compiled (mjCHField::Compile)."""
    base = model_dir if model_dir is not None else Path.cwd()
    out: list[HFieldAsset] = []
    names: set[str] = set()
    for section in sections.get("asset", []):
        for node in section.children:
            if node.tag != "hfield":
                continue
            a = typed_attrs(node)
            if "size" not in a:
                raise node.error("required attribute missing: 'size'", "size")
            name = a.get("name", "")
            fname = a.get("file", "")
            if strippath and fname:
                fname = fname.replace("\\", "/").rsplit("/", 1)[-1]
            if not name and fname:
                stem = fname.replace("\\", "/").rsplit("/", 1)[-1]
                name = stem.rsplit(".", 1)[0] if "." in stem else stem
            if not name:
                raise node.error("empty name in height field", "name")
            if name in names:
                raise node.error(f"repeated name '{name}' in hfield", "name")
            names.add(name)
            hf = HFieldAsset(node, a, name, len(out))
            _compile(hf, fname, meshdir, base)
            out.append(hf)
    return out


def _compile(hf: HFieldAsset, fname: str, meshdir: str, base: Path) -> None:
    a = hf.attrs
    elevation = a.get("elevation", [])
    nrow, ncol = a.get("nrow", 0), a.get("ncol", 0)
    data = None
    if elevation:
        if nrow * ncol != len(elevation):
            raise hf.error("elevation data length must match nrow*ncol", "elevation")
        # the XML lists the top row first; MuJoCo stores row 0 at -size[1]
        data = np.asarray(elevation, dtype=np.float32).reshape(nrow, ncol)[::-1].ravel()
    if any(s <= 0 for s in a["size"]):
        raise hf.error("size parameter is not positive in hfield", "size")
    if not all(np.isfinite(a["size"])):
        raise hf.error("size parameter is not finite in hfield", "size")
    hf.size = [float(s) for s in a["size"]]
    if fname:
        if data is not None:
            raise hf.error("hfield specified from file and manually", "file")
        nrow, ncol, data = _load_file(hf, fname, meshdir, base)
    if nrow < 1 or ncol < 1:
        raise hf.error("hfield not specified", "nrow" if "nrow" in a or "ncol" in a else "file")
    if nrow < 2 or ncol < 2:
        raise hf.error("hfield dimensions must be at least 2", "nrow" if nrow < 2 else "ncol")
    if nrow * ncol > MAX_ELEVATIONS:
        raise hf.error(f"could not allocate buffers in hfield ({nrow} x {ncol} elevations; kinedyn takes "
                       f"at most {MAX_ELEVATIONS})", "nrow" if "nrow" in a else "file")
    if data is None:
        data = np.zeros(nrow * ncol, dtype=np.float32)
    if not np.all(np.isfinite(data)):
        raise hf.error("invalid data range in hfield", "file" if fname else "elevation")
    # elevations to [0, 1] in float32, as MuJoCo's float arrays
    emin, emax = np.float32(data.min()), np.float32(data.max())
    data = (data - emin).astype(np.float32)
    if float(emax - emin) > 1e-14:
        data = (data / np.float32(emax - emin)).astype(np.float32)
    hf.nrow, hf.ncol, hf.data = int(nrow), int(ncol), data


def _content_type(hf: HFieldAsset, fname: str) -> str:
    given = hf.attrs.get("content_type")
    if given in (PNG, CUSTOM):
        return given
    if given in _OTHER_TYPES.values():
        raise hf.error(f"unsupported content type: '{given}'", "content_type")
    ext = fname.rsplit(".", 1)[-1].lower() if "." in fname.replace("\\", "/").rsplit("/", 1)[-1] else ""
    if ext == "png":
        return PNG
    if ext in _OTHER_TYPES:
        raise hf.error(f"unsupported content type: '{_OTHER_TYPES[ext]}'", "file")
    return CUSTOM


def _load_file(hf: HFieldAsset, fname: str, meshdir: str, base: Path) -> tuple[int, int, np.ndarray]:
    ctype = _content_type(hf, fname)
    path, _ = asset_path(hf.node, meshdir, fname, base)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise hf.error(f"cannot read hfield file '{path}': {err.strerror or err}", "file") from None
    if ctype == PNG:
        grey = _png_grey(hf, raw, path)
        nrow, ncol = grey.shape
        return nrow, ncol, grey[::-1].astype(np.float32).ravel()
    # MuJoCo's binary format (mjCHField::LoadCustom)
    if not raw:
        raise hf.error(f"empty hfield file '{path}'", "file")
    if len(raw) < 8:
        raise hf.error(f"hfield missing header '{path}'", "file")
    nrow, ncol = (int(v) for v in np.frombuffer(raw[:8], dtype="<i4"))
    if nrow < 1 or ncol < 1:
        raise hf.error(f"non-positive hfield dimensions in file '{path}'", "file")
    if len(raw) != nrow * ncol * 4 + 8:
        raise hf.error(f"unexpected file size in file '{path}'", "file")
    return nrow, ncol, np.frombuffer(raw[8:], dtype="<f4").astype(np.float32)


def _png_grey(hf: HFieldAsset, raw: bytes, path: Path) -> np.ndarray:
    """The image as lodepng converts it to 8-bit grey (LCT_GREY): grey samples as they are (the
    high byte of 16-bit ones), colour images by their red channel, palettes through their
    colours."""
    import io

    from PIL import Image, UnidentifiedImageError

    try:
        img = Image.open(io.BytesIO(raw))
        img.load()
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as err:
        raise hf.error(f"error decoding PNG file '{path}': {err}", "file") from None
    if img.format != "PNG":
        raise hf.error(f"error decoding PNG file '{path}': not a PNG file", "file")
    mode = img.mode
    if mode in ("I;16", "I;16B", "I;16L", "I"):
        return (np.asarray(img, dtype=np.int64) >> 8).astype(np.uint8)
    if mode in ("L", "LA"):
        return np.asarray(img.getchannel(0), dtype=np.uint8)
    if mode == "1":
        return np.asarray(img.convert("L"), dtype=np.uint8)
    return np.asarray(img.convert("RGB").getchannel(0), dtype=np.uint8)


def hfield_arrays(hfields: list[HFieldAsset]) -> tuple[dict, dict]:
    """The hfield_* Model arrays and sizes (mjCModel::CopyObjects)."""
    adr, n = [], 0
    for hf in hfields:
        adr.append(n)
        n += hf.nrow * hf.ncol
    arr = dict(
        hfield_size=np.array([hf.size for hf in hfields], dtype=float).reshape(len(hfields), 4),
        hfield_nrow=np.array([hf.nrow for hf in hfields], dtype=np.int32),
        hfield_ncol=np.array([hf.ncol for hf in hfields], dtype=np.int32),
        hfield_adr=np.array(adr, dtype=np.int32),
        hfield_data=(np.concatenate([hf.data for hf in hfields]).astype(np.float64) if hfields
                     else np.zeros(0)))
    return arr, dict(nhfield=len(hfields), nhfielddata=n)


def geom_size_aabb_rbound(hsize) -> tuple[list, list, float]:
    """A height-field geom's size, bounding box (centre, half-sizes) and bounding-sphere radius
    (mjCGeom::Compile, mjCGeom::GetRBound): the box spans [-size[3], size[2]] in z."""
    s0, s1, s2, s3 = hsize
    size = [s0, s1, 0.25 * s2 + 0.5 * s3]
    aabb = [0.0, 0.0, 0.5 * (s2 - s3), s0, s1, 0.5 * (s2 + s3)]
    rbound = float(np.sqrt(s0 * s0 + s1 * s1 + max(s2 * s2, s3 * s3)))
    return size, aabb, rbound


__all__ = ["HFieldAsset", "geom_size_aabb_rbound", "hfield_arrays", "read_hfields"]
