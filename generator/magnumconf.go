package generator

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	"gopkg.in/ini.v1"
)

// deprecatedLabelOptions are [capi_helm] options that moved to [capi_helm_cluster_labels]
// in magnum-capi-helm 1.4.0; an old magnum.conf still sets them under [capi_helm].
var deprecatedLabelOptions = []string{"csi_cinder_availability_zone", "csi_cinder_reclaim_policy",
	"csi_cinder_volume_binding_mode", "csi_cinder_fstype", "csi_cinder_allow_volume_expansion",
	"etcd_volume_size", "etcd_volume_type"}

// ParseMagnumConf applies the sections of a magnum.conf (INI) that the driver reads —
// [capi_helm], [capi_helm_cluster_labels], [cinder], [cinder_client], [drivers] — onto c,
// option by option with oslo.config's value syntax. Other sections and unknown options are
// ignored (magnum.conf holds far more than the driver reads); a value of the wrong type is
// an error naming the section and option.
func ParseMagnumConf(data []byte, c *MagnumConfig) error {
	f, err := ini.LoadSources(ini.LoadOptions{AllowPythonMultilineValues: true, SpaceBeforeInlineComment: true}, data)
	if err != nil {
		// The parser quotes the offending line, which may be a password line: say where.
		return &v1alpha1.FieldError{Field: "magnum.conf", Message: iniProblem(data)}
	}
	var p problems
	sections := map[string]any{
		"capi_helm": &c.CapiHelm, "capi_helm_cluster_labels": &c.CapiHelmClusterLabels,
		"cinder": &c.Cinder, "cinder_client": &c.CinderClient, "drivers": &c.Drivers,
	}
	for _, name := range []string{"capi_helm", "capi_helm_cluster_labels", "cinder", "cinder_client", "drivers"} {
		sec, err := f.GetSection(name)
		if err != nil {
			continue
		}
		for _, key := range sec.Keys() {
			setOption(&p, "magnum.conf ["+name+"] "+key.Name(), sections[name], key.Name(), key.String())
		}
	}
	// Deprecated [capi_helm] aliases apply unless the new section sets the option.
	if old, err := f.GetSection("capi_helm"); err == nil {
		labels, _ := f.GetSection("capi_helm_cluster_labels")
		for _, opt := range deprecatedLabelOptions {
			if !old.HasKey(opt) || (labels != nil && labels.HasKey(opt)) {
				continue
			}
			setOption(&p, "magnum.conf [capi_helm] "+opt, &c.CapiHelmClusterLabels, opt, old.Key(opt).String())
		}
	}
	return p.err()
}

// setOption sets the field of section whose json name is opt.
func setOption(p *problems, field string, section any, opt, value string) {
	v := reflect.ValueOf(section).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name == opt {
			if err := setValue(v.Field(i), strings.TrimSpace(value)); err != nil {
				p.add(field, "%v", err)
			}
			return
		}
	}
}

func setValue(f reflect.Value, s string) error {
	if f.Kind() == reflect.Pointer {
		if s == "" || strings.EqualFold(s, "none") {
			f.Set(reflect.Zero(f.Type()))
			return nil
		}
		n := reflect.New(f.Type().Elem())
		if err := setValue(n.Elem(), s); err != nil {
			return err
		}
		f.Set(n)
		return nil
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(s)
	case reflect.Int:
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("must be an integer, got %q", s)
		}
		f.SetInt(int64(n))
	case reflect.Bool:
		b, ok := parseBool(s)
		if !ok {
			return fmt.Errorf("must be a boolean (true/false, yes/no, on/off, 1/0), got %q", s)
		}
		f.SetBool(b)
	case reflect.Slice:
		var items []string
		for _, it := range strings.Split(s, ",") {
			if it = strings.TrimSpace(it); it != "" {
				items = append(items, it)
			}
		}
		if items == nil {
			items = []string{}
		}
		f.Set(reflect.ValueOf(items))
	default:
		return fmt.Errorf("unsupported option type %s", f.Type())
	}
	return nil
}

// iniProblem says where an INI file stops parsing, without quoting it: the first line that
// is neither blank, a comment, a section header, a continuation nor key = value.
func iniProblem(data []byte) string {
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "", strings.HasPrefix(t, "#"), strings.HasPrefix(t, ";"),
			line[0] == ' ' || line[0] == '\t': // a continuation of the value above
		case strings.HasPrefix(t, "["):
			if !strings.HasSuffix(t, "]") {
				return fmt.Sprintf("line %d: a section header must end with ']' (the line is not quoted: magnum.conf holds passwords)", i+1)
			}
		case !strings.ContainsAny(t, "=:"):
			return fmt.Sprintf("line %d: no '=' or ':' (the line is not quoted: magnum.conf holds passwords)", i+1)
		}
	}
	return "not a valid INI file (no line is quoted: magnum.conf holds passwords)"
}
