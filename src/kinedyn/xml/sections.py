"""The sections kinedyn reads but does not simulate, checked as strictly as MuJoCo 4.0 checks them.

``<visual>``, ``<statistic>``, ``<asset>`` (textures, materials, skins; meshes and height fields
are the compiler's) and ``<custom>`` (numeric, text and tuple fields) change no dynamics:
kinedyn keeps none of their values in the Model. MuJoCo still refuses a model with an unknown
element or attribute there, a badly formatted or miscounted number, a geom, site or tendon
whose material does not exist, a material whose texture does not exist, a texture file that
cannot be opened, or a custom field without a name; so does kinedyn (:func:`check_sections`),
so that a file loads in kinedyn exactly when it loads in MuJoCo. The schema below is MuJoCo
4.0's (doc/XMLschema.rst and XMLreference.rst of the installed wheel).
"""

from __future__ import annotations

import os

from kinedyn.xml.mjcf import _DEC_RE, _HEX_RE, _INT_RE, _SPECIAL_RE, Node, _split, asset_path

_B = ("e", ("false", "true"))
_F4 = "f4"

# element -> attribute -> kind ("f", "f3", "f*", "i", "i2", "i*", "s", or ("e", keywords))
SCHEMA: dict[str, dict] = {
    "global": dict(cameraid="i", orthographic=_B, fovy="f", ipd="f", azimuth="f", elevation="f",
                   linewidth="f", glow="f", offwidth="i", offheight="i", realtime="f", ellipsoidinertia=_B,
                   bvactive=_B),
    "quality": dict(shadowsize="i", offsamples="i", numslices="i", numstacks="i", numquads="i"),
    "headlight": dict(ambient="f3", diffuse="f3", specular="f3", active=("e", ("false", "true", "auto"))),
    "map": {k: "f" for k in ("stiffness", "stiffnessrot", "force", "torque", "alpha", "fogstart", "fogend",
                             "znear", "zfar", "haze", "shadowclip", "shadowscale", "actuatortendon")},
    "scale": {k: "f" for k in ("forcewidth", "contactwidth", "contactheight", "connect", "com", "camera",
                               "light", "selectpoint", "jointlength", "jointwidth", "actuatorlength",
                               "actuatorwidth", "framelength", "framewidth", "constraint", "slidercrank",
                               "frustum")},
    "rgba": {k: _F4 for k in ("fog", "haze", "force", "inertia", "joint", "actuator", "actuatornegative",
                              "actuatorpositive", "com", "camera", "light", "selectpoint", "connect",
                              "contactpoint", "contactforce", "contactfriction", "contacttorque",
                              "contactgap", "rangefinder", "constraint", "slidercrank", "crankbroken",
                              "frustum", "bv", "bvactive")},
    "statistic": dict(meaninertia="f", meanmass="f", meansize="f", extent="f", center="f3"),
    "skin": dict(name="s", file="s", material="s", rgba=_F4, inflate="f", vertex="f*", texcoord="f*",
                 face="i*", group="i"),
    "bone": dict(body="s", bindpos="f3", bindquat="f4", vertid="i*", vertweight="f*"),
    "texture": dict(name="s", **{"class": "s"}, type=("e", ("2d", "cube", "skybox")),
                    colorspace=("e", ("auto", "linear", "sRGB")), content_type="s", file="s", gridsize="i2",
                    gridlayout="s", fileright="s", fileleft="s", fileup="s", filedown="s", filefront="s",
                    fileback="s", builtin=("e", ("none", "gradient", "checker", "flat")), rgb1="f3",
                    rgb2="f3", mark=("e", ("none", "edge", "cross", "random")), markrgb="f3", random="f",
                    width="i", height="i", hflip=_B, vflip=_B, nchannel="i",
                    embed=("e", ("false", "true", "auto"))),
    "material": dict(name="s", **{"class": "s"}, texture="s", texrepeat="f2", texuniform=_B, emission="f",
                     specular="f", shininess="f", reflectance="f", metallic="f", roughness="f", rgba=_F4),
    "layer": dict(texture="s", role="s"),
    "numeric": dict(name="s", size="i", data="f*"),
    "text": dict(name="s", data="s"),
    "tuple": dict(name="s"),
    "element": dict(objtype="s", objname="s", prm="f"),
}
# children each element may have (mesh and hfield: the compiler checks them)
_CHILDREN = {"visual": ("global", "quality", "headlight", "map", "scale", "rgba"), "statistic": (),
             "asset": ("mesh", "hfield", "skin", "texture", "material"), "skin": ("bone",),
             "material": ("layer",), "custom": ("numeric", "text", "tuple"), "tuple": ("element",)}
_UNIQUE = {"visual"}  # <visual>'s children appear at most once each
_TEXTURE_FILES = ("file", "fileright", "fileleft", "fileup", "filedown", "filefront", "fileback")
# <layer role> keywords (mjtTextureRole without mjTEXROLE_USER)
TEXTURE_ROLES = ("rgb", "occlusion", "roughness", "metallic", "normal", "opacity", "emissive", "rgba", "orm")
_INT_MAX = 2**31 - 1


def _check_value(node: Node, attr: str, kind, text: str) -> None:
    if isinstance(kind, tuple):
        if text.strip() not in kind[1]:
            raise node.error(f"invalid keyword {text.strip()!r} in attribute '{attr}'; expected one of "
                             f"{', '.join(kind[1])}", attr)
        return
    if kind == "s":
        return
    parts = _split(text)
    for part in parts:  # strtod / strtol formats; MuJoCo takes nan and inf here (no dynamics)
        ok = (_DEC_RE.match(part) and part.isascii()) or _HEX_RE.match(part) or _SPECIAL_RE.match(part)
        if kind[0] == "i":
            ok = _INT_RE.match(part) is not None
        if not ok:
            raise node.error(f"bad format in attribute '{attr}': {text!r}", attr)
    count = kind[1:] or "1"
    if count != "*" and len(parts) < int(count):
        raise node.error(f"attribute '{attr}' does not have enough data", attr)
    if count != "*" and len(parts) > int(count):
        raise node.error(f"attribute '{attr}' has too much data", attr)


def _check_tree(section: Node) -> None:
    todo = [section]
    while todo:
        node = todo.pop()
        allowed = _CHILDREN.get(node.tag, ())
        seen = set()
        for child in node.children:
            if child.tag not in allowed:
                raise child.error("Schema violation: unrecognized element")
            if node.tag in _UNIQUE and child.tag in seen:
                raise child.error(f"Schema violation: unique element '{child.tag}' found more than once")
            seen.add(child.tag)
            if child.tag not in ("mesh", "hfield"):
                todo.append(child)
        if node.tag in ("visual", "asset", "custom"):
            continue
        check_attributes(node, SCHEMA[node.tag])
        if node.tag == "material":
            check_material_layers(node)


def check_attributes(node: Node, schema: dict) -> None:
    """Every attribute of ``node`` known to ``schema`` and well formed (MuJoCo's ReadAttr checks)."""
    for attr, text in node.attrib.items():
        if attr not in schema:
            raise node.error(f"Schema violation: unrecognized attribute: '{attr}'", attr)
        _check_value(node, attr, schema[attr], text)


def check_material_layers(node: Node) -> None:
    """A material's ``<layer>`` children (xml_native_reader OneMaterial), in ``<asset>`` or a default:
    not with a ``texture`` attribute; ``role`` (a known one) and ``texture`` required."""
    for layer in node.children:
        if layer.tag != "layer":
            raise layer.error("Schema violation: unrecognized element")
        if layer.children:
            raise layer.children[0].error("Schema violation: unrecognized element")
        check_attributes(layer, SCHEMA["layer"])
        if "texture" in node.attrib:
            raise layer.error("A material with a texture attribute cannot have layer sub-elements")
        for attr in ("role", "texture"):
            if attr not in layer.attrib:
                raise layer.error(f"required attribute missing: '{attr}'", attr)
        if layer.attrib["role"] not in TEXTURE_ROLES:
            raise layer.error(f"unknown layer role '{layer.attrib['role']}'", "role")


def _asset_name(node: Node) -> str:
    """An asset's name: its ``name``, else its file name without folders and extension."""
    return node.attrib.get("name") or os.path.splitext(os.path.basename(node.attrib.get("file", "")))[0]


def _check_texture(node: Node) -> None:
    """What mjCTexture::Compile refuses in a texture kinedyn does not keep (MuJoCo 4.0's checks, in its
    order): a builtin texture's channels and size; a texture with neither builtin nor file."""
    a = node.attrib
    kind = a.get("type", "cube").strip()  # MuJoCo's default type
    gridsize = [int(v) for v in _split(a.get("gridsize", "1 1"))]
    if "gridlayout" in a and len(a["gridlayout"]) != gridsize[0] * gridsize[1]:
        raise node.error("gridlayout length must match gridsize", "gridlayout")
    if a.get("builtin", "none").strip() != "none":
        if int(a.get("nchannel", "3")) != 3:
            raise node.error("builtin textures must have 3 channels", "nchannel")
        width, height = int(a.get("width", "0")), int(a.get("height", "0"))
        if width < 1 or (kind != "2d" and width >= _INT_MAX // 6):
            raise node.error("Invalid width of builtin texture", "width")
        if kind == "2d" and height < 1:
            raise node.error("Invalid height of builtin texture", "height")
    elif "file" not in a:
        if kind == "2d":
            raise node.error("Cannot load 2D texture from separate files, texture", "file")
        if not any(a.get(f) for f in _TEXTURE_FILES[1:]):
            raise node.error("No cubefiles_ defined in cube or skybox texture", "file")


def check_unique_names(nodes: list[Node], kind: str, names=None) -> None:
    """MuJoCo's CheckRepeat for one kind of asset: two elements with the same non-empty name."""
    seen: set[str] = set()
    for node in nodes:
        name = names(node) if names is not None else node.attrib.get("name", "")
        if name and name in seen:
            raise node.error(f"repeated name '{name}' in {kind}", "name")
        seen.add(name)


def check_sections(root: Node, path: str | os.PathLike | None) -> None:
    """Refuse what MuJoCo 4.0 refuses in the sections kinedyn does not simulate (module docstring)."""
    if root.tag != "mujoco":
        return
    sections = [c for c in root.children if c.tag in ("visual", "statistic", "asset", "custom")]
    for section in sections:
        _check_tree(section)
    # custom fields (xml_native_reader Custom): names, sizes, non-empty text
    for section in (s for s in sections if s.tag == "custom"):
        for node in section.children:
            if not node.attrib.get("name"):
                raise node.error("required attribute missing: 'name'", "name")
            if node.tag == "numeric" and "size" in node.attrib:
                size, data = int(node.attrib["size"]), _split(node.attrib.get("data", ""))
                if len(data) > size:
                    raise node.error("attribute 'data' has too much data", "data")
                if size < 1:
                    raise node.error("numeric size must be positive", "size")
            if node.tag == "text" and not node.attrib.get("data", "").strip():
                raise node.error("text field cannot be empty", "data")
    # references to materials and textures, and texture files (mjCModel::Compile, mjCTexture)
    assets = [n for s in sections if s.tag == "asset" for n in s.children]
    for node in assets:
        if node.tag == "hfield" and node.children:
            raise node.children[0].error("Schema violation: unrecognized element")
        if node.tag == "texture":
            _check_texture(node)
    # names (mjCModel::CheckEmptyNames, CheckRepeat): meshes are the compiler's
    by_kind = {k: [n for n in assets if n.tag == k] for k in ("texture", "material", "hfield", "skin")}
    check_unique_names(by_kind["texture"], "texture", _asset_name)
    check_unique_names(by_kind["material"], "material")
    check_unique_names(by_kind["hfield"], "hfield", _asset_name)
    check_unique_names(by_kind["skin"], "skin", _asset_name)
    for node in by_kind["texture"]:
        if not _asset_name(node) and node.attrib.get("type", "cube").strip() != "skybox":
            raise node.error("empty name in texture", "name")
    for node in by_kind["hfield"]:
        if not _asset_name(node):
            raise node.error("empty name in height field", "name")
    for node in by_kind["material"]:
        if not node.attrib.get("name"):
            raise node.error("empty name in material", "name")
    textures = {_asset_name(n) for n in by_kind["texture"]}
    materials = {n.attrib.get("name", "") for n in by_kind["material"]}
    for node in assets:
        if node.tag == "material":
            for ref in [node] + node.find_all("layer"):
                if ref.attrib.get("texture") and ref.attrib["texture"] not in textures:
                    raise ref.error(f"texture '{ref.attrib['texture']}' not found in material", "texture")
        if node.tag == "texture":  # a model given as a string: relative to the working directory
            _check_texture_file(root, node, os.path.dirname(os.fspath(path)) if path is not None else "")
    todo = [c for c in root.children if c.tag in ("worldbody", "tendon")]
    while todo:
        node = todo.pop()
        if node.tag in ("geom", "site", "spatial") and node.attrib.get("material"):
            if node.attrib["material"] not in materials:
                raise node.error(f"material '{node.attrib['material']}' not found in {node.tag}", "material")
        todo.extend(node.children)


def _check_texture_file(root: Node, node: Node, model_dir: str) -> None:
    dirs = {"texturedir": "", "assetdir": ""}
    for c in root.children:
        if c.tag == "compiler":
            dirs.update({k: v for k, v in c.attrib.items() if k in dirs})
    directory = dirs["texturedir"] or dirs["assetdir"]
    for attr in _TEXTURE_FILES:
        file = node.attrib.get(attr)
        if file and not asset_path(node, directory, file, model_dir)[1]:
            raise node.error(f"Error opening file '{file}'", attr)
